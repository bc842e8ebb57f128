/**
 * Detects the real media type of common upload formats from their bytes, so
 * that a `blob:` permission is checked against what the file is, not only
 * against what the client declared.
 */
export function detectMediaType(bytes: Uint8Array): string | undefined {
  const starts = (signature: number[], offset = 0) => signature.every((byte, i) => bytes[offset + i] === byte);
  const ascii = (text: string, offset = 0) => starts([...text].map((char) => char.charCodeAt(0)), offset);

  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (ascii("GIF87a") || ascii("GIF89a")) return "image/gif";
  if (ascii("RIFF") && ascii("WEBP", 8)) return "image/webp";
  if (ascii("ftyp", 4)) return "video/mp4";
  return detectText(bytes);
}

function detectText(bytes: Uint8Array): string | undefined {
  if (bytes.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  // Control characters other than tab, newline and carriage return mean binary.
  if (hasBinaryControlCharacter(text)) return undefined;
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      JSON.parse(trimmed);
      return "application/json";
    } catch {
      // Not JSON after all: plain text.
    }
  }
  return "text/plain";
}

/** The essence of a Content-Type header (`type/subtype`, lowercase), or undefined when malformed. */
export function mediaTypeEssence(contentType: string | null): string | undefined {
  const essence = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(essence) ? essence : undefined;
}

function hasBinaryControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f) return true;
  }
  return false;
}
