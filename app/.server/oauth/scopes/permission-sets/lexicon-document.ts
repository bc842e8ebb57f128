import { isNsid, type LexiconPermission, type LexiconPermissionSet } from "@atproto/oauth-scopes";
import { z } from "zod";
import { visibleText } from "../../../util/visible-text.ts";
import { PermissionSetResolutionError } from "./permission-set-resolver.ts";

/**
 * A lexicon document whose `main` definition is an atproto permission set:
 *
 *   {lexicon: 1, id: <nsid>, defs: {main: {type: "permission-set", title?, "title:lang"?,
 *    detail?, "detail:lang"?, permissions: [{type: "permission", resource, ...params}]}}}
 *
 * Documents come from a configured directory or from the network (a
 * com.atproto.lexicon.schema record), so everything is bounded: the number
 * of permissions, of parameters, of array items, of languages, and the
 * length of every string.
 */

export const MAX_PERMISSIONS = 100;
export const MAX_PERMISSION_PARAMS = 16;
export const MAX_PARAM_ARRAY_ITEMS = 64;
export const MAX_PARAM_STRING_LENGTH = 1024;
export const MAX_TITLE_LENGTH = 1024;
export const MAX_DETAIL_LENGTH = 10_000;
export const MAX_LANGUAGES = 64;
export const MAX_DEFS = 64;

const paramValue = z.union([z.string().max(MAX_PARAM_STRING_LENGTH), z.number().int().safe(), z.boolean()]);

const permission = z
  .object({
    type: z.literal("permission"),
    resource: z.string().min(1).max(64),
  })
  .catchall(z.union([paramValue, z.array(paramValue).max(MAX_PARAM_ARRAY_ITEMS)]))
  .refine((value) => Object.keys(value).length <= MAX_PERMISSION_PARAMS + 2, {
    message: `a permission may have at most ${MAX_PERMISSION_PARAMS} parameters`,
  });

const langMap = (maxLength: number) =>
  z
    .record(z.string().min(1).max(64), z.string().max(maxLength))
    .refine((value) => Object.keys(value).length <= MAX_LANGUAGES, { message: `at most ${MAX_LANGUAGES} languages` });

const permissionSetDef = z.object({
  type: z.literal("permission-set"),
  title: z.string().max(MAX_TITLE_LENGTH).optional(),
  "title:lang": langMap(MAX_TITLE_LENGTH).optional(),
  detail: z.string().max(MAX_DETAIL_LENGTH).optional(),
  "detail:lang": langMap(MAX_DETAIL_LENGTH).optional(),
  description: z.string().max(MAX_DETAIL_LENGTH).optional(),
  permissions: z.array(permission).max(MAX_PERMISSIONS, { message: `at most ${MAX_PERMISSIONS} permissions` }),
});

export const lexiconPermissionSetDocumentSchema = z
  .object({
    lexicon: z.literal(1),
    id: z.string().refine(isNsid, { message: "not a valid NSID" }),
    defs: z
      .object({ main: permissionSetDef })
      .catchall(z.unknown())
      .refine((value) => Object.keys(value).length <= MAX_DEFS, { message: `at most ${MAX_DEFS} definitions` }),
  })
  .passthrough();

export type LexiconPermissionSetDocument = z.infer<typeof lexiconPermissionSetDocumentSchema>;

/** The lexicon's id when `document` is an object with a string `id`, for indexing documents that fail validation. */
export function lexiconDocumentId(document: unknown): string | undefined {
  if (typeof document !== "object" || document === null || Array.isArray(document)) return undefined;
  const id = (document as { id?: unknown }).id;
  return typeof id === "string" ? id : undefined;
}

/**
 * Validates `document` as the lexicon `nsid` whose `main` definition is a
 * permission set, and returns that definition (only the fields
 * LexiconPermissionSet knows). Throws PermissionSetResolutionError.
 */
export function permissionSetFromLexicon(nsid: string, document: unknown): LexiconPermissionSet {
  const parsed = lexiconPermissionSetDocumentSchema.safeParse(document);
  if (!parsed.success) {
    throw new PermissionSetResolutionError(nsid, `The lexicon document for ${nsid} is not a permission set: ${describeIssues(parsed.error)}`);
  }
  const { id, defs } = parsed.data;
  if (id !== nsid) {
    throw new PermissionSetResolutionError(nsid, `The lexicon document for ${nsid} has id ${JSON.stringify(id)}`);
  }
  const main = defs.main;
  const result: {
    -readonly [K in keyof LexiconPermissionSet]: LexiconPermissionSet[K];
  } = {
    type: "permission-set",
    permissions: main.permissions.map((entry) => ({ ...entry }) as LexiconPermission),
  };
  // Titles and details are the publisher's text, shown on the consent screen: no bidi or control characters.
  const title = visibleText(main.title, MAX_TITLE_LENGTH);
  if (title !== undefined) result.title = title;
  if (main["title:lang"] !== undefined) result["title:lang"] = visibleTexts(main["title:lang"], MAX_TITLE_LENGTH);
  const detail = visibleText(main.detail, MAX_DETAIL_LENGTH);
  if (detail !== undefined) result.detail = detail;
  if (main["detail:lang"] !== undefined) result["detail:lang"] = visibleTexts(main["detail:lang"], MAX_DETAIL_LENGTH);
  return result;
}

function visibleTexts(byLanguage: Record<string, string>, maxLength: number): Record<string, string> {
  return Object.fromEntries(Object.entries(byLanguage).flatMap(([language, text]) => {
    const visible = visibleText(text, maxLength);
    return visible === undefined ? [] : [[language, visible]];
  }));
}

function describeIssues(error: z.ZodError): string {
  const issues = error.issues.slice(0, 3).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.join(".") : "document";
    return `${where}: ${issue.message}`;
  });
  if (error.issues.length > 3) issues.push(`and ${error.issues.length - 3} more`);
  return issues.join("; ");
}
