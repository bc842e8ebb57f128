import { AtriumError } from "../errors/atrium-error.ts";

export type AccountField = "handle" | "email" | "password" | "did" | "recoveryKey";

/**
 * The stable codes of AccountError: a malformed or taken field
 * (`handle_invalid`, `handle_taken`, … for each field), a reserved handle or one on a domain not served here
 * (accounts/handle-rules.ts), a wrong current password, an identifier that names no account, a command line misused.
 */
export type AccountErrorCode =
  | `${AccountField}_invalid`
  | `${AccountField}_taken`
  | "handle_reserved"
  | "handle_unsupported"
  | "did_unregistered"
  | "password_wrong"
  | "account_not_found"
  | "usage";

/** A refusal a person can act on: taken or malformed handle, email, password. */
export class AccountError extends AtriumError {
  declare readonly field?: AccountField;

  constructor(code: AccountErrorCode, message: string, field?: AccountField) {
    super(code, message, { status: 400, field });
  }
}
