import { z } from "zod";

/**
 * The query of com.atproto.sync.subscribeRepos. The lexicon's one parameter,
 * `cursor` ("The last known event seq number to backfill from"), is an
 * integer; sequence numbers start at 1, so 0 means "everything in the
 * window". Anything else (a sign, a fraction, a second cursor, a number past
 * 2^53) is refused with an error frame on the socket, as the lexicon's own
 * errors are.
 */
const cursorSchema = z
  .array(z.string())
  .max(1, "cursor may be given once")
  .transform((values) => values[0])
  .pipe(
    z
      .string()
      .regex(/^\d{1,16}$/, "cursor must be a whole number of at most 16 digits")
      .transform(Number)
      .refine(Number.isSafeInteger, "cursor is too large")
      .optional(),
  );

export type SubscribeParams = { ok: true; cursor: number | undefined } | { ok: false; message: string };

export function parseSubscribeParams(query: URLSearchParams): SubscribeParams {
  const parsed = cursorSchema.safeParse(query.getAll("cursor"));
  if (parsed.success) return { ok: true, cursor: parsed.data };
  return { ok: false, message: parsed.error.issues[0]?.message ?? "Invalid cursor" };
}
