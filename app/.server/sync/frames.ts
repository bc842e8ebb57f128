import { decode, encode, type LexValue } from "@atproto/lex-cbor";
import type { LoggedEvent, RepoEventType } from "./event-log.ts";

/**
 * The binary frames of an atproto event stream (docs/decisions/0029): per
 * the event stream spec, each is one binary WebSocket message holding two
 * DAG-CBOR objects back to back, a header and a payload. A message's header
 * is `{op: 1, t: "#<type>"}`; an error's is `{op: -1}`, followed by
 * `{error, message}`.
 */

/** What a stream error frame names: the subscribeRepos lexicon's errors, and XRPC's general ones for bad parameters and failures. */
export type StreamErrorName = "FutureCursor" | "ConsumerTooSlow" | "InvalidRequest" | "InternalServerError";

const HEADERS = new Map<string, Uint8Array>();

/** A message header, encoded once per type. */
function messageHeader(type: RepoEventType | "info"): Uint8Array {
  let header = HEADERS.get(type);
  if (!header) {
    header = encode({ op: 1, t: `#${type}` });
    HEADERS.set(type, header);
  }
  return header;
}

function concat(header: Uint8Array, body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(header.length + body.length);
  frame.set(header, 0);
  frame.set(body, header.length);
  return frame;
}

/**
 * A logged event as a frame: its body with `seq` added. The log stores the
 * body without `seq` (known only once appended: event-log.ts), so the body is
 * decoded and encoded again here, once per event; DAG-CBOR's canonical key
 * order puts `seq` where every reader expects it.
 */
export function eventFrame(event: LoggedEvent): Uint8Array {
  const body = decode(event.body) as Record<string, LexValue>;
  return concat(messageHeader(event.type), encode({ ...body, seq: event.seq }));
}

/** The `#info` message (the lexicon knows one name: OutdatedCursor). */
export function infoFrame(name: "OutdatedCursor", message: string): Uint8Array {
  return concat(messageHeader("info"), encode({ name, message }));
}

const ERROR_HEADER = encode({ op: -1 });

/** An error frame; the server closes the stream after it (the event stream spec). */
export function errorFrame(error: StreamErrorName, message: string): Uint8Array {
  return concat(ERROR_HEADER, encode({ error, message }));
}
