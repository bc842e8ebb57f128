import { lexicons } from "@atproto/api";
import { decodeAll, type LexValue } from "@atproto/lex-cbor";

/**
 * Checks firehose frames against the com.atproto.sync.subscribeRepos lexicon, as `@atproto/api` ships it and
 * `@atproto/lexicon` validates it (formats, required and nullable fields, lengths): the reference's own checks, no copy
 * of the lexicon of ours. A frame is two DAG-CBOR objects, a header and a body; `decodeFrame` splits them and checks
 * both, so a test consumer sees only frames a relay would accept.
 */

const SUBSCRIBE_REPOS = "com.atproto.sync.subscribeRepos";
type SubscriptionDef = { message: { schema: { refs: string[] } }; errors: Array<{ name: string }> };
const DEFINITION = lexicons.getDefOrThrow(SUBSCRIBE_REPOS) as unknown as SubscriptionDef;

/** The message types a frame's header may name (`#commit`, `#sync`, `#identity`, `#account`, `#info`). */
export const MESSAGE_TYPES = DEFINITION.message.schema.refs.map((ref) => ref.slice(ref.indexOf("#")));
export const LEXICON_ERRORS = DEFINITION.errors.map((error) => error.name);
/** XRPC's general errors, which any method may answer (a malformed parameter, a failure). */
const GENERAL_ERRORS = ["InvalidRequest", "InternalServerError"];

export type Frame =
  | { kind: "message"; type: string; body: Record<string, unknown> }
  | { kind: "error"; error: string; message: string | undefined };

/** Decodes one WebSocket message; throws when the header or the body breaks the lexicon. */
export function decodeFrame(bytes: Uint8Array): Frame {
  const items = [...decodeAll(bytes)];
  if (items.length !== 2) throw new Error(`a frame is a header and a body, not ${items.length} DAG-CBOR objects`);
  const [header, body] = items as [Record<string, LexValue>, Record<string, LexValue>];
  if (header.op === -1) {
    const { error, message } = body;
    if (typeof error !== "string" || ![...LEXICON_ERRORS, ...GENERAL_ERRORS].includes(error)) throw new Error(`error frame with unknown error ${String(error)}`);
    if (message !== undefined && typeof message !== "string") throw new Error("error frame's message is not a string");
    if (Object.keys(header).length !== 1) throw new Error(`error header has extra fields: ${JSON.stringify(header)}`);
    return { kind: "error", error, message };
  }
  if (header.op !== 1 || typeof header.t !== "string" || !MESSAGE_TYPES.includes(header.t)) throw new Error(`bad frame header ${JSON.stringify(header)}`);
  lexicons.assertValidXrpcMessage(SUBSCRIBE_REPOS, { $type: `${SUBSCRIBE_REPOS}${header.t}`, ...body });
  return { kind: "message", type: header.t, body };
}
