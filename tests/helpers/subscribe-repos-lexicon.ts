import { readFileSync } from "node:fs";
import * as dagCbor from "@ipld/dag-cbor";
import { CID } from "multiformats/cid";

/**
 * Checks firehose frames against the com.atproto.sync.subscribeRepos lexicon
 * (lexicons/com.atproto.sync.subscribeRepos.json: the atproto repository's
 * lexicon, descriptions left out). A frame is two DAG-CBOR objects, a header
 * and a body; `decodeFrame` splits them and checks both, so a test consumer
 * sees only frames a relay would accept.
 */

type Field = {
  type: string;
  format?: string;
  ref?: string;
  items?: Field;
  maxLength?: number;
  knownValues?: string[];
};
type ObjectDef = { type: "object"; required?: string[]; nullable?: string[]; properties: Record<string, Field> };
type Lexicon = {
  defs: {
    main: { message: { schema: { refs: string[] } }; errors: Array<{ name: string }> };
  } & Record<string, ObjectDef>;
};

const LEXICON = JSON.parse(readFileSync(new URL("./lexicons/com.atproto.sync.subscribeRepos.json", import.meta.url), "utf8")) as Lexicon;
export const MESSAGE_TYPES = LEXICON.defs.main.message.schema.refs;
export const LEXICON_ERRORS = LEXICON.defs.main.errors.map((error) => error.name);
/** XRPC's general errors, which any method may answer (a malformed parameter, a failure). */
const GENERAL_ERRORS = ["InvalidRequest", "InternalServerError"];

const FORMATS: Record<string, RegExp> = {
  did: /^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$/,
  tid: /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/,
  // atproto datetimes: RFC 3339 with a time zone.
  datetime: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
  handle: /^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/,
};

export type Frame =
  | { kind: "message"; type: string; body: Record<string, unknown> }
  | { kind: "error"; error: string; message: string | undefined };

/** Decodes one WebSocket message; throws when the header or the body breaks the lexicon. */
export function decodeFrame(bytes: Uint8Array): Frame {
  const [header, rest] = splitHeader(bytes);
  const body = dagCbor.decode<Record<string, unknown>>(rest);
  if (header.op === -1) {
    const { error, message } = body;
    if (typeof error !== "string" || ![...LEXICON_ERRORS, ...GENERAL_ERRORS].includes(error)) throw new Error(`error frame with unknown error ${String(error)}`);
    if (message !== undefined && typeof message !== "string") throw new Error("error frame's message is not a string");
    if (Object.keys(header).length !== 1) throw new Error(`error header has extra fields: ${JSON.stringify(header)}`);
    return { kind: "error", error, message };
  }
  if (header.op !== 1 || typeof header.t !== "string" || !MESSAGE_TYPES.includes(header.t)) throw new Error(`bad frame header ${JSON.stringify(header)}`);
  checkObject(header.t.slice(1), body, header.t);
  return { kind: "message", type: header.t, body };
}

/**
 * The header and what follows. CBOR items are self-delimiting, so the one
 * prefix that decodes as a whole item is the header (dag-cbor 10 refuses
 * trailing bytes and has no decodeFirst).
 */
function splitHeader(bytes: Uint8Array): [Record<string, unknown>, Uint8Array] {
  for (let length = 1; length <= Math.min(bytes.length, 64); length++) {
    try {
      return [dagCbor.decode<Record<string, unknown>>(bytes.subarray(0, length)), bytes.subarray(length)];
    } catch {
      // Not a whole item yet.
    }
  }
  throw new Error("no DAG-CBOR header at the start of the frame");
}

function checkObject(defName: string, value: unknown, path: string): void {
  const def = LEXICON.defs[defName];
  if (!def || def.type !== "object") throw new Error(`${path}: no object def ${defName}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error(`${path}: not an object`);
  const object = value as Record<string, unknown>;
  for (const name of def.required ?? []) {
    if (!(name in object) || object[name] === undefined) throw new Error(`${path}.${name}: required, missing`);
  }
  for (const [name, field] of Object.entries(def.properties)) {
    if (!(name in object)) continue;
    if (object[name] === null) {
      if (!(def.nullable ?? []).includes(name)) throw new Error(`${path}.${name}: null, and not nullable`);
      continue;
    }
    checkField(field, object[name], `${path}.${name}`);
  }
}

function checkField(field: Field, value: unknown, path: string): void {
  switch (field.type) {
    case "integer":
      if (!Number.isSafeInteger(value)) throw new Error(`${path}: not an integer`);
      return;
    case "boolean":
      if (typeof value !== "boolean") throw new Error(`${path}: not a boolean`);
      return;
    case "string":
      if (typeof value !== "string") throw new Error(`${path}: not a string`);
      if (field.format && !FORMATS[field.format]!.test(value)) throw new Error(`${path}: ${JSON.stringify(value)} is not a ${field.format}`);
      return;
    case "cid-link":
      if (CID.asCID(value) === null) throw new Error(`${path}: not a CID link`);
      return;
    case "bytes":
      if (!(value instanceof Uint8Array)) throw new Error(`${path}: not bytes`);
      if (field.maxLength !== undefined && value.length > field.maxLength) throw new Error(`${path}: ${value.length} bytes, over ${field.maxLength}`);
      return;
    case "array":
      if (!Array.isArray(value)) throw new Error(`${path}: not an array`);
      if (field.maxLength !== undefined && value.length > field.maxLength) throw new Error(`${path}: over ${field.maxLength} items`);
      value.forEach((item, index) => checkField(field.items!, item, `${path}[${index}]`));
      return;
    case "ref":
      checkObject(field.ref!.replace(/^#/, ""), value, path);
      return;
    default:
      throw new Error(`${path}: unknown lexicon type ${field.type}`);
  }
}
