/**
 * Control characters in what a request names (docs/decisions/0045-hardening-handles-budgets-preferences-input.md).
 * No identifier, parameter or form field this server looks up can hold one: atproto's identifiers (DIDs, handles,
 * NSIDs, record keys, CIDs, TIDs) are printable ASCII by their syntax, and OAuth's parameters are VSCHAR or NQCHAR
 * (RFC 6749 Appendix A: %x20-7E). PostgreSQL refuses a NUL in any text ("invalid byte sequence for encoding UTF8:
 * 0x00"), so a NUL that reached a statement was a 500; the entries refuse them all, before any query, with their own
 * 400: the XRPC router (parameters), `readForm` (OAuth), the screens' forms, links and JSON.
 */

// eslint-disable-next-line no-control-regex -- the point is to match control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** The same, less TAB, LF and CR: whitespace that pasting into a form field may bring, which each field's rule trims. */
// eslint-disable-next-line no-control-regex -- the point is to match control characters
const CONTROL_BUT_LINE_WHITESPACE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Whether `text` holds a C0 control, DEL or a C1 control (Unicode category Cc). */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/** Whether `text` holds a control character other than TAB, LF and CR: what a person's form field may not carry. */
export function hasTypedControlCharacter(text: string): boolean {
  return CONTROL_BUT_LINE_WHITESPACE.test(text);
}

/** The first name or value of `entries` that holds a control character, for the refusal to name. */
export function firstWithControlCharacter(entries: Iterable<[string, string]>, test: (text: string) => boolean = hasControlCharacter): string | undefined {
  for (const [name, value] of entries) if (test(name) || test(value)) return name;
  return undefined;
}

/** Whether any string in a parsed JSON value (keys included) holds a control character; walked without recursion. */
export function jsonHasControlCharacter(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === "string") {
      if (hasControlCharacter(current)) return true;
    } else if (current !== null && typeof current === "object") {
      for (const [key, child] of Object.entries(current)) {
        if (hasControlCharacter(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}
