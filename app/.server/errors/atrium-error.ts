/**
 * The one error model (docs/architecture.md, "Errors"). Every error this
 * server explains to someone is an AtriumError: a stable `code` that
 * programs can rely on (never the message), an HTTP `status`, a message a
 * person can act on, and what its answer needs besides: a
 * `WWW-Authenticate` challenge (RFC 9110 §11.6.1, RFC 9449 §7.1), a
 * `Retry-After` and other headers, the XRPC error name, a page title, the form field it
 * belongs to. `describeError` (describe-error.ts) turns anything thrown into
 * one; one renderer per shape writes it: OAuth JSON and XRPC JSON
 * (http/error-answers.ts), pages (screens/outcome.ts).
 */

export type AtriumErrorOptions = {
  status?: number;
  /** The WWW-Authenticate value this error's answer carries (token errors at a protected resource). */
  challenge?: string;
  /** Seconds before trying again is worth it (429, 503). */
  retryAfterSeconds?: number;
  /** Other headers its answer carries (a rate limit's RateLimit-* fields). */
  headers?: Readonly<Record<string, string>>;
  /** The XRPC `error` name, when the error is the data server's own (atproto XRPC conventions). */
  xrpcName?: string;
  /** The heading of the page that explains it (screens). */
  title?: string;
  /** The form field it belongs to (screens). */
  field?: string;
  /**
   * Where the screens find this error's words in the person's language (docs/decisions/0019): keys of the
   * catalogue ("errors:passkey.malformed"), with the values their placeholders take. The message itself stays the
   * English text (logs, JSON APIs); a screen shows it as it is when no key is given.
   */
  messageKey?: string;
  titleKey?: string;
  messageValues?: Record<string, string | number>;
  cause?: unknown;
};

export class AtriumError extends Error {
  readonly status: number;
  readonly challenge?: string;
  readonly retryAfterSeconds?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly xrpcName?: string;
  readonly title?: string;
  readonly field?: string;
  readonly messageKey?: string;
  readonly titleKey?: string;
  readonly messageValues?: Record<string, string | number>;

  constructor(
    readonly code: string,
    message: string,
    options: AtriumErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status ?? 400;
    this.challenge = options.challenge;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
    this.xrpcName = options.xrpcName;
    this.title = options.title;
    this.field = options.field;
    this.messageKey = options.messageKey;
    this.titleKey = options.titleKey;
    this.messageValues = options.messageValues;
  }

  /** The message, under the name RFC 6749 §5.2 gives it. */
  get description(): string {
    return this.message;
  }
}

/** True for an AtriumError with this code (or one of these codes). */
export function hasCode(error: unknown, ...codes: string[]): error is AtriumError {
  return error instanceof AtriumError && codes.includes(error.code);
}
