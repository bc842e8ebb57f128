import { AtriumError } from "../errors/atrium-error.ts";

/**
 * The PLC directory could not be reached, refused an operation, or answered something that is not a did:plc
 * document or operation. 502: the directory is another server; the account is left as it was.
 */
export type IdentityErrorCode = "plc_unreachable" | "plc_refused" | "plc_malformed" | "plc_not_registered";

export class IdentityError extends AtriumError {
  constructor(code: IdentityErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { status: code === "plc_not_registered" ? 400 : 502, xrpcName: code === "plc_not_registered" ? "InvalidRequest" : "UpstreamFailure", cause: options.cause });
  }
}
