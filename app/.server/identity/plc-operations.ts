import type { Language } from "../../i18n/languages.ts";
import type { AccountManager } from "../accounts/account-manager.ts";
import type { TypedCodes } from "../accounts/typed-codes.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { IdentityRegistry } from "./plc-identity.ts";
import { fieldsOf } from "./plc-identity.ts";
import type { PlcOperation } from "./plc-operation.ts";
import { submittedOperation, type PlcOperationChange } from "./plc-operation-input.ts";

/** A refusal of an identity operation, with the reference PDS's XRPC name. */
export class PlcOperationError extends AtriumError {
  constructor(xrpcName: "InvalidRequest" | "InvalidToken", message: string) {
    super(xrpcName === "InvalidToken" ? "plc_token_invalid" : "plc_operation_invalid", message, { status: 400, xrpcName });
  }
}

/** The email that carries the code (account:plcOperation.email), in a language. */
export type PlcOperationEmail = (values: { service: string; code: string; minutes: number; handle: string }, language: Language) => { subject: string; text: string };

export type PlcOperationsOptions = {
  serviceName: string;
  /** PUBLIC_URL exactly: the `#atproto_pds` endpoint of the DID documents of the accounts that live here. */
  pdsEndpoint: string;
  email: PlcOperationEmail;
  /** Told after an operation went to the directory: the firehose's #identity event. */
  onIdentityChanged: (did: string) => Promise<void>;
};

/** What getRecommendedDidCredentials answers (its lexicon's output). */
export type RecommendedCredentials = {
  rotationKeys: string[];
  alsoKnownAs: string[];
  verificationMethods: Record<string, string>;
  services: Record<string, { type: string; endpoint: string }>;
};

/**
 * The PLC operations a person makes on their own DID through this server, as the reference PDS offers them
 * (docs/decisions/0050): the credentials this server would have the DID name, an emailed code, an operation signed
 * with this server's rotation key on the strength of that code (a new rotation key, signing key, handle or PDS: the
 * way to move away), and the submission of a signed operation that keeps this server's key and endpoint (the way to
 * move here). Who may call them is the XRPC handlers' rule (xrpc/handlers/identity.ts, `requireIdentityControl`).
 */
export class PlcOperations {
  constructor(
    private readonly identity: IdentityRegistry,
    private readonly accounts: AccountManager,
    private readonly codes: TypedCodes,
    private readonly mailer: Mailer | undefined,
    /** Counts the requests for a code ("plc-operation" counters), so that a stolen token cannot flood the mailbox. */
    private readonly throttle: SignInThrottle,
    private readonly options: PlcOperationsOptions,
  ) {}

  /**
   * getRecommendedDidCredentials: what the DID document should say for the account to live here, as the reference
   * answers it: this server's rotation key alone, the account's handle, its signing key and this PDS.
   */
  async recommendedCredentials(did: string): Promise<RecommendedCredentials> {
    const account = await this.requireAccount(did);
    const signingKey = await this.accounts.signingKeypair(did);
    if (!signingKey) throw new PlcOperationError("InvalidRequest", "account not found");
    return {
      rotationKeys: [this.identity.rotationKeyDid],
      alsoKnownAs: [`at://${account.handle}`],
      verificationMethods: { atproto: signingKey.did() },
      services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: this.options.pdsEndpoint } },
    };
  }

  /**
   * requestPlcOperationSignature: a new code (the earlier one stops working), emailed to the account's address.
   * Every request counts on the account's and the address's "plc-operation" counters, which refuse with a wait after
   * three, as the deletion codes' do.
   */
  async requestSignature(did: string, address: string | undefined, language: Language): Promise<void> {
    if (!this.mailer) throw new PlcOperationError("InvalidRequest", "This server sends no email, so it cannot send the code that confirms an identity operation: ask its operator");
    await this.throttle.failed(await this.throttle.claim({ account: did }, address));
    await this.requireAccount(did);
    const code = await this.codes.issue(did, "plc-operation");
    // Read after the code exists, as deletion does: an email change commits either before (the code goes to the new
    // address) or after (and ends this code).
    const account = await this.requireAccount(did);
    const minutes = Math.round(this.codes.lifetimeMs / 60_000);
    await this.mailer.send({ to: account.email, ...this.options.email({ service: this.options.serviceName, code, minutes, handle: account.handle }, language) });
  }

  /**
   * signPlcOperation: the code is spent, then the DID's next operation is signed with this server's rotation key:
   * the last operation's fields, with those the input names replaced. Not submitted: the person (or the new PDS)
   * submits it. Refused for a tombstoned DID, and for one whose rotation keys no longer include this server's.
   */
  async sign(did: string, change: PlcOperationChange): Promise<PlcOperation> {
    if (!change.token) throw new PlcOperationError("InvalidRequest", "email confirmation token required to sign PLC operations");
    const outcome = await this.codes.guess(did, "plc-operation", change.token);
    if (outcome.kind !== "spent") throw new PlcOperationError("InvalidToken", "Token is invalid or expired: ask for a new one with requestPlcOperationSignature");
    const last = await this.identity.lastOperation(did);
    if (!last) throw new PlcOperationError("InvalidRequest", "The DID is not registered at the PLC directory");
    if (last.type === "plc_tombstone") throw new PlcOperationError("InvalidRequest", "Did is tombstoned");
    const current = fieldsOf(last);
    return this.identity.signUpdate(did, last, {
      rotationKeys: change.rotationKeys ?? current.rotationKeys,
      alsoKnownAs: change.alsoKnownAs ?? current.alsoKnownAs,
      verificationMethods: change.verificationMethods ?? current.verificationMethods,
      services: change.services ?? current.services,
    });
  }

  /**
   * submitPlcOperation: a signed operation for the caller's DID goes to the directory, as the reference checks it:
   * it must keep this server's rotation key, this PDS as `#atproto_pds`, the account's signing key as `#atproto` and
   * its handle first in `alsoKnownAs`, so that an account that lives here is never pointed away from here by it (that
   * is signPlcOperation's and the new server's). The directory checks the signature and the chain; then #identity.
   */
  async submit(did: string, input: unknown): Promise<void> {
    const parsed = submittedOperation.safeParse(input);
    if (!parsed.success) throw new PlcOperationError("InvalidRequest", `Invalid operation: ${parsed.error.issues[0]?.path.join(".") || "operation"} ${parsed.error.issues[0]?.message ?? ""}`.trim());
    const operation = parsed.data;
    if (!operation.rotationKeys.includes(this.identity.rotationKeyDid)) throw new PlcOperationError("InvalidRequest", "Rotation keys do not include server's rotation key");
    const pds = operation.services.atproto_pds;
    if (pds?.type !== "AtprotoPersonalDataServer") throw new PlcOperationError("InvalidRequest", "Incorrect type on atproto_pds service");
    if (pds.endpoint !== this.options.pdsEndpoint) throw new PlcOperationError("InvalidRequest", "Incorrect endpoint on atproto_pds service");
    const signingKey = await this.accounts.signingKeypair(did);
    if (!signingKey || operation.verificationMethods.atproto !== signingKey.did()) throw new PlcOperationError("InvalidRequest", "Incorrect signing key");
    const account = await this.requireAccount(did);
    if (operation.alsoKnownAs[0] !== `at://${account.handle}`) throw new PlcOperationError("InvalidRequest", "Incorrect handle in alsoKnownAs");
    await this.identity.submit(did, operation);
    await this.options.onIdentityChanged(did);
  }

  private async requireAccount(did: string) {
    const account = await this.accounts.findByDid(did);
    if (!account) throw new PlcOperationError("InvalidRequest", "account not found");
    return account;
  }
}
