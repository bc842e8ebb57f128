/**
 * Whether a text, fed piece by piece, is a JSON object or array with nothing but white space around it: what
 * `JSON.parse(text.trim())` accepts when the trimmed text starts with `{` or `[`, decided without holding the text
 * (an upload is sniffed as it streams: docs/decisions/0043). RFC 8259 §2–§7 is the grammar; around the value, the
 * white space `String.prototype.trim` removes (ECMAScript's WhiteSpace and LineTerminator, which `\s` matches);
 * between its tokens only JSON's own (space, tab, line feed, carriage return).
 */
export class JsonScan {
  private state: State = "before";
  /** The open containers, innermost last: true for an object, false for an array. */
  private readonly open: boolean[] = [];
  /** Inside a string: whether it is an object's key. */
  private keyString = false;
  /** Hex digits still expected after `\u`. */
  private hexLeft = 0;
  /** The rest of the literal being read (`rue` after `t`). */
  private literalLeft = "";

  /** Feeds the next piece of the text. */
  push(text: string): void {
    for (let i = 0; i < text.length && this.state !== "failed"; i++) this.step(text.charCodeAt(i));
  }

  /** At the end of the text: whether it was one JSON object or array. */
  finish(): boolean {
    return this.state === "after";
  }

  private step(code: number): void {
    switch (this.state) {
      case "before":
        if (isTrimSpace(code)) return;
        if (code === OPEN_BRACE || code === OPEN_BRACKET) return this.openContainer(code);
        return this.fail();
      case "after":
        if (!isTrimSpace(code)) this.fail();
        return;
      case "failed":
        return;
      case "value":
        return this.value(code, false);
      case "array-start":
        return this.value(code, true);
      case "object-start":
        if (isJsonSpace(code)) return;
        if (code === CLOSE_BRACE) return this.closeContainer(true);
        return this.key(code);
      case "key":
        if (isJsonSpace(code)) return;
        return this.key(code);
      case "colon":
        if (isJsonSpace(code)) return;
        if (code === COLON) this.state = "value";
        else this.fail();
        return;
      case "after-value":
        return this.afterValue(code);
      case "string":
        return this.stringCharacter(code);
      case "escape":
        return this.escape(code);
      case "unicode":
        if (!isHexDigit(code)) return this.fail();
        if (--this.hexLeft === 0) this.state = "string";
        return;
      case "literal":
        if (code !== this.literalLeft.charCodeAt(0)) return this.fail();
        this.literalLeft = this.literalLeft.slice(1);
        if (this.literalLeft === "") this.state = "after-value";
        return;
      default:
        return this.number(this.state, code);
    }
  }

  private fail(): void {
    this.state = "failed";
  }

  private openContainer(code: number): void {
    this.open.push(code === OPEN_BRACE);
    this.state = code === OPEN_BRACE ? "object-start" : "array-start";
  }

  private closeContainer(object: boolean): void {
    if (this.open.pop() !== object) return this.fail();
    this.state = this.open.length === 0 ? "after" : "after-value";
  }

  /** Where a value may start (`]` too, right after `[`). */
  private value(code: number, arrayStart: boolean): void {
    if (isJsonSpace(code)) return;
    if (arrayStart && code === CLOSE_BRACKET) return this.closeContainer(false);
    if (code === OPEN_BRACE || code === OPEN_BRACKET) return this.openContainer(code);
    if (code === QUOTE) {
      this.keyString = false;
      this.state = "string";
      return;
    }
    if (code === MINUS) {
      this.state = "number-minus";
      return;
    }
    if (code === ZERO) {
      this.state = "number-zero";
      return;
    }
    if (isDigit(code)) {
      this.state = "number-integer";
      return;
    }
    const literal = LITERALS.get(code);
    if (literal === undefined) return this.fail();
    this.literalLeft = literal;
    this.state = "literal";
  }

  private key(code: number): void {
    if (code !== QUOTE) return this.fail();
    this.keyString = true;
    this.state = "string";
  }

  private afterValue(code: number): void {
    if (isJsonSpace(code)) return;
    const inObject = this.open[this.open.length - 1]!;
    if (code === COMMA) {
      this.state = inObject ? "key" : "value";
      return;
    }
    if (code === (inObject ? CLOSE_BRACE : CLOSE_BRACKET)) return this.closeContainer(inObject);
    this.fail();
  }

  private stringCharacter(code: number): void {
    // RFC 8259 §7: control characters must be escaped inside strings.
    if (code < 0x20) return this.fail();
    if (code === BACKSLASH) this.state = "escape";
    else if (code === QUOTE) this.state = this.keyString ? "colon" : "after-value";
  }

  private escape(code: number): void {
    if (code === LOWER_U) {
      this.hexLeft = 4;
      this.state = "unicode";
    } else if (SIMPLE_ESCAPES.has(code)) {
      this.state = "string";
    } else {
      this.fail();
    }
  }

  /** RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; the character after it goes on as after a value. */
  private number(state: NumberState, code: number): void {
    const next = numberStep(state, code);
    if (next === "end") {
      this.state = "after-value";
      this.afterValue(code);
    } else if (next === "failed") {
      this.fail();
    } else {
      this.state = next;
    }
  }
}

type NumberState =
  | "number-minus"
  | "number-zero"
  | "number-integer"
  | "number-dot"
  | "number-fraction"
  | "number-exponent"
  | "number-exponent-sign"
  | "number-exponent-digits";

type State =
  | "before"
  | "after"
  | "failed"
  | "value"
  | "array-start"
  | "object-start"
  | "key"
  | "colon"
  | "after-value"
  | "string"
  | "escape"
  | "unicode"
  | "literal"
  | NumberState;

/** The number's next state, "end" when `code` is past its end (allowed only where a number may end), or "failed". */
function numberStep(state: NumberState, code: number): NumberState | "end" | "failed" {
  const digit = isDigit(code);
  switch (state) {
    case "number-minus":
      return code === ZERO ? "number-zero" : digit ? "number-integer" : "failed";
    case "number-zero":
    case "number-integer":
      if (digit) return state === "number-zero" ? "failed" : "number-integer";
      if (code === DOT) return "number-dot";
      if (code === LOWER_E || code === UPPER_E) return "number-exponent";
      return "end";
    case "number-dot":
      return digit ? "number-fraction" : "failed";
    case "number-fraction":
      if (digit) return "number-fraction";
      if (code === LOWER_E || code === UPPER_E) return "number-exponent";
      return "end";
    case "number-exponent":
      if (code === PLUS || code === MINUS) return "number-exponent-sign";
      return digit ? "number-exponent-digits" : "failed";
    case "number-exponent-sign":
      return digit ? "number-exponent-digits" : "failed";
    case "number-exponent-digits":
      return digit ? "number-exponent-digits" : "end";
  }
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const LOWER_U = 0x75;
/** `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`. */
const SIMPLE_ESCAPES = new Set([...'"\\/bfnrt'].map((char) => char.charCodeAt(0)));
/** The literals by their first character, with what must follow it. */
const LITERALS = new Map([
  [0x74, "rue"],
  [0x66, "alse"],
  [0x6e, "ull"],
]);

const isDigit = (code: number) => code >= ZERO && code <= 0x39;
const isHexDigit = (code: number) => isDigit(code) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
/** RFC 8259 §2: the white space allowed between tokens. */
const isJsonSpace = (code: number) => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
/** What String.prototype.trim removes (ECMAScript WhiteSpace and LineTerminator). */
const isTrimSpace = (code: number) => isJsonSpace(code) || (code > 0x7f && /\s/.test(String.fromCharCode(code))) || code === 0x0b || code === 0x0c;
