import { enumBlobRefs, isLegacyBlobRef, isTypedBlobRef, type LexMap, type LexValue } from "@atproto/lex-data";
import { BlobRef, type LexRecord, type Lexicons } from "@atproto/lexicon";
import { isDatetimeString, isValidNsid, isValidTid } from "@atproto/syntax";

/**
 * Records checked against their lexicons (docs/decisions/0049). The lexicon documents are those `@atproto/api` ships
 * and `@atproto/lexicon` validates against them: no schema is copied here. Known are the record types of the
 * `com.atproto.*`, `app.bsky.*` and `chat.bsky.*` lexicons; every other collection is unknown to this server.
 */
const KNOWN_NAMESPACES = ["com.atproto.", "app.bsky.", "chat.bsky."];

/** com.atproto.repo.createRecord#output: `validationStatus`, "valid" or "unknown"; absent when not validated. */
export type ValidationStatus = "valid" | "unknown";

/** A record the lexicons, or the rules every new record follows, refuse; the message says why. */
export class InvalidRecordError extends Error {}

let loading: Promise<Lexicons> | undefined;

/**
 * The lexicons, loaded when a record of the three namespaces is first checked rather than at start: the documents
 * are a megabyte of code that costs a start some 100 ms of CPU (docs/decisions/0049), which a process that writes no
 * such record, and the many short-lived servers of the tests, need not pay. Only the documents and their `Lexicons`
 * come from @atproto/api: the build leaves its client out.
 */
function recordLexicons(): Promise<Lexicons> {
  loading ??= import("@atproto/api").then((api) => api.lexicons);
  return loading;
}

/**
 * The lexicon's record definition for a collection this server knows, or undefined. A lexicon that is not a record
 * (`app.bsky.feed.defs`) names no collection this server knows.
 */
export async function knownRecordLexicon(collection: string): Promise<{ lexicons: Lexicons; lexicon: LexRecord } | undefined> {
  if (!KNOWN_NAMESPACES.some((namespace) => collection.startsWith(namespace))) return undefined;
  const lexicons = await recordLexicons();
  const def = lexicons.getDef(collection);
  return def?.type === "record" ? { lexicons, lexicon: def } : undefined;
}

/**
 * Checks a new record (a create or an update) as the reference PDS does, and says what was checked.
 * com.atproto.repo.createRecord, `validate`: "Can be set to 'false' to skip Lexicon schema validation of record
 * data, 'true' to require it, or leave unset to validate only for known Lexicons." So `true` refuses a collection
 * this server has no lexicon for, unset stores it as "unknown", `false` validates nothing (undefined: no status).
 * Whatever `validate` says, a new record may not hold a legacy blob reference.
 */
export async function checkNewRecord(collection: string, rkey: string, record: LexMap, validate: boolean | undefined): Promise<ValidationStatus | undefined> {
  // The reference validates first, so that a legacy blob where the lexicon wants a blob is told as such.
  const status = validate === false ? undefined : await validateRecord(collection, rkey, record, validate === true);
  refuseLegacyBlobs(record);
  return status;
}

async function validateRecord(collection: string, rkey: string, record: LexMap, required: boolean): Promise<ValidationStatus> {
  const known = await knownRecordLexicon(collection);
  if (known === undefined) {
    if (required) throw new InvalidRecordError(`Unknown lexicon type: ${collection}`);
    return "unknown";
  }
  const { lexicons, lexicon } = known;
  const keyProblem = recordKeyProblem(lexicon.key, rkey);
  if (keyProblem !== undefined) throw new InvalidRecordError(`Invalid record key for ${collection}: ${keyProblem}`);
  try {
    lexicons.assertValidRecord(collection, lexiconValue(record));
  } catch (error) {
    throw new InvalidRecordError(`Invalid ${collection} record: ${error instanceof Error ? error.message : String(error)}`);
  }
  // @atproto/lexicon checks datetimes leniently (a time without a zone passes); the reference checks them strictly,
  // and a record's createdAt is what app views order it by.
  if (lexicon.record.properties.createdAt?.type === "string" && lexicon.record.properties.createdAt.format === "datetime") {
    const createdAt = record.createdAt;
    if (typeof createdAt === "string" && !isDatetimeString(createdAt)) {
      throw new InvalidRecordError(`Invalid ${collection} record: Record/createdAt must be an valid atproto datetime (both RFC-3339 and ISO-8601)`);
    }
  }
  return "valid";
}

/**
 * Lexicon "Record Key Type": `tid`, `nsid`, `literal:<value>` or `any` (any valid record key, which the route has
 * checked already). What is wrong with `rkey`, or undefined.
 */
export function recordKeyProblem(keyType: string | undefined, rkey: string): string | undefined {
  if (keyType === undefined || keyType === "any") return undefined;
  if (keyType === "tid") return isValidTid(rkey) ? undefined : `${JSON.stringify(rkey)} must be a TID`;
  if (keyType === "nsid") return isValidNsid(rkey) ? undefined : `${JSON.stringify(rkey)} must be an NSID`;
  if (keyType.startsWith("literal:")) {
    const literal = keyType.slice("literal:".length);
    return rkey === literal ? undefined : `${JSON.stringify(rkey)} must be ${JSON.stringify(literal)}`;
  }
  return `the lexicon's record key type ${JSON.stringify(keyType)} is not one this server knows`;
}

/**
 * The data-model value as `@atproto/lexicon` validates it: CIDs and bytes as they are, and blob references as its
 * `BlobRef` (its validator accepts nothing else where a lexicon says `blob`). Only the typed form becomes one: a
 * legacy `{cid, mimeType}` where a blob belongs is refused by the lexicon, as the reference's strict validation does.
 */
function lexiconValue(value: LexValue): unknown {
  if (Array.isArray(value)) return value.map(lexiconValue);
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  if (isTypedBlobRef(value)) return new BlobRef(value.ref as never, value.mimeType, value.size);
  if (!isPlainObject(value)) return value; // a CID
  const converted: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) converted[key] = lexiconValue(child as LexValue);
  return converted;
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * The reference PDS refuses new records holding a legacy blob reference (`{"cid": …, "mimeType": …}`, nothing else,
 * the CID valid), validated or not: new blobs are referenced in the typed form only. Records written before keep
 * theirs (blob-refs.ts still counts them).
 */
function refuseLegacyBlobs(record: LexMap): void {
  for (const blob of enumBlobRefs(record, { strict: false, allowLegacy: true })) {
    if (isLegacyBlobRef(blob, { strict: false })) throw new InvalidRecordError(`Legacy blobs are not allowed (${blob.cid})`);
  }
}
