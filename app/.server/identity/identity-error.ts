import { AtriumError } from "../errors/atrium-error.ts";

/**
 * The PLC directory could not be reached, refused an operation, or answered something that is not a did:plc
 * document or operation: 502, the directory is another server, and the account is left as it was. Or the operation
 * was refused for what it is (a 4xx of the directory: its signature, its `prev`, its keys), or the DID is in a state
 * that allows nothing from here: never registered, tombstoned, or moved (this server's rotation key is no longer among
 * its rotation keys: docs/decisions/0050): 400, said in the person's words on the screens.
 */
export type IdentityErrorCode = "plc_unreachable" | "plc_refused" | "plc_malformed" | "plc_not_registered" | "plc_tombstoned" | "plc_moved" | "plc_operation_refused";

const STATE_MESSAGES: Partial<Record<IdentityErrorCode, string>> = {
  plc_tombstoned: "errors:identity.tombstoned",
  plc_moved: "errors:identity.moved",
  plc_operation_refused: "errors:identity.refused",
};

export class IdentityError extends AtriumError {
  constructor(code: IdentityErrorCode, message: string, options: { cause?: unknown } = {}) {
    const state = code === "plc_not_registered" || code in STATE_MESSAGES;
    super(code, message, { status: state ? 400 : 502, xrpcName: state ? "InvalidRequest" : "UpstreamFailure", messageKey: STATE_MESSAGES[code], cause: options.cause });
  }
}
