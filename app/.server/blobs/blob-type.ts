import { JsonScan } from "./json-scan.ts";

/**
 * Detects the real media type of common upload formats from their bytes, so that a `blob:` permission is checked
 * against what the file is, not only against what the client declared. An upload is sniffed as it streams to the
 * content store (docs/decisions/0043): the signatures need its first bytes only, and the text checks (UTF-8, no
 * control characters, JSON) run piece by piece, so nothing but a few bytes of state is held whatever the size.
 */
export class MediaSniffer {
  /** The first bytes, where the signatures are. */
  private readonly head = new Uint8Array(SIGNATURE_BYTES);
  private headLength = 0;
  private text: TextSniffer | undefined = new TextSniffer();

  push(chunk: Uint8Array): void {
    if (this.headLength < SIGNATURE_BYTES) {
      const taken = chunk.subarray(0, SIGNATURE_BYTES - this.headLength);
      this.head.set(taken, this.headLength);
      this.headLength += taken.length;
    }
    if (this.text && !this.text.push(chunk)) this.text = undefined;
  }

  /** The detected type once every byte was pushed; undefined when the bytes are not recognised. */
  result(): string | undefined {
    return signatureType(this.head.subarray(0, this.headLength)) ?? this.text?.finish();
  }
}

/** The whole bytes at once (tests, and anything already in memory). */
export function detectMediaType(bytes: Uint8Array): string | undefined {
  const sniffer = new MediaSniffer();
  sniffer.push(bytes);
  return sniffer.result();
}

/** The longest prefix a signature reads: `WEBP` at offset 8. */
const SIGNATURE_BYTES = 12;

/** The type a file's first bytes announce (PNG, JPEG, GIF, WebP, MP4), or undefined. */
export function signatureType(bytes: Uint8Array): string | undefined {
  const starts = (signature: number[], offset = 0) => signature.every((byte, i) => bytes[offset + i] === byte);
  const ascii = (text: string, offset = 0) => starts([...text].map((char) => char.charCodeAt(0)), offset);

  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (ascii("GIF87a") || ascii("GIF89a")) return "image/gif";
  if (ascii("RIFF") && ascii("WEBP", 8)) return "image/webp";
  if (ascii("ftyp", 4)) return "video/mp4";
  return undefined;
}

/**
 * Text: valid UTF-8 without control characters other than tab, line feed and carriage return; JSON when the whole
 * text is one JSON object or array (json-scan.ts), plain text otherwise.
 */
class TextSniffer {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private readonly json = new JsonScan();
  private empty = true;

  /** False once the bytes cannot be text. */
  push(chunk: Uint8Array): boolean {
    if (chunk.length === 0) return true;
    this.empty = false;
    // A control byte is never part of a longer UTF-8 sequence, so the bytes can be checked before decoding.
    if (hasBinaryControlByte(chunk)) return false;
    try {
      this.json.push(this.decoder.decode(chunk, { stream: true }));
    } catch {
      return false;
    }
    return true;
  }

  finish(): string | undefined {
    if (this.empty) return undefined;
    try {
      this.json.push(this.decoder.decode());
    } catch {
      // A multi-byte character cut off at the end.
      return undefined;
    }
    return this.json.finish() ? "application/json" : "text/plain";
  }
}

/** The essence of a Content-Type header (`type/subtype`, lowercase), or undefined when malformed. */
export function mediaTypeEssence(contentType: string | null): string | undefined {
  const essence = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(essence) ? essence : undefined;
}

function hasBinaryControlByte(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) || byte === 0x7f) return true;
  }
  return false;
}
