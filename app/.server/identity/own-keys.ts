import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import { IdentityError } from "./identity-error.ts";
import { fieldsOf, type Control, type IdentityRegistry } from "./plc-identity.ts";
import { MAX_ROTATION_KEYS, parseRecoveryKey, withOwnKeyFirst } from "./rotation-keys.ts";

/** A key that cannot be added or removed, said beside the field (the catalogue's errors:ownKey.*). */
export class OwnKeyError extends AtriumError {
  constructor(reason: "invalid" | "serverKey" | "already" | "tooMany" | "notThere", values: Record<string, string | number> = {}) {
    const messageKey = `errors:ownKey.${reason}`;
    super(`own_key_${reason}`, englishText(messageKey, values), { status: 400, field: "didKey", messageKey, messageValues: values });
  }
}

/**
 * What the DID document says now (its last operation: did:plc documents do not list rotation keys), for the page
 * that shows it. `rotationKeys` in their order of authority, each marked when it is this server's.
 */
export type IdentityState = {
  did: string;
  control: Control;
  handles: string[];
  pdsEndpoint?: string;
  signingKey?: string;
  rotationKeys: Array<{ didKey: string; server: boolean }>;
};

/** The notice that a key was added, in a language (account:ownKey.addedEmail). */
export type KeyAddedEmail = (values: { service: string; handle: string; key: string }, language: Language) => { subject: string; text: string };

export type OwnKeysOptions = {
  serviceName: string;
  addedEmail: KeyAddedEmail;
  /** Told after the DID's operation went to the directory: the firehose's #identity event. */
  onIdentityChanged: (did: string) => Promise<void>;
  /** A notice that could not be sent (logged; the key is added all the same). */
  onSendError: (error: unknown) => void;
};

/**
 * "Keep a key of your own" (docs/decisions/0050): a did:key the person holds, placed first in the DID's rotation keys,
 * above this server's, so that they can move their identity even if this server disappears or refuses; and removed
 * again. Each change is one operation signed with this server's key while it is still among the rotation keys; the
 * directory orders concurrent changes (the second, chained to the same `prev`, is refused and can be retried).
 */
export class OwnKeys {
  constructor(
    private readonly identity: IdentityRegistry,
    private readonly mailer: Mailer | undefined,
    private readonly options: OwnKeysOptions,
  ) {}

  /** The DID's state as the directory has it; undefined when the directory has no live operation for it. */
  async state(did: string): Promise<IdentityState | undefined> {
    const last = await this.identity.lastOperation(did);
    if (!last) return undefined;
    const control = await this.identity.control(did);
    if (last.type === "plc_tombstone") return { did, control, handles: [], rotationKeys: [] };
    const pds = last.services.atproto_pds;
    return {
      did,
      control,
      handles: last.alsoKnownAs.filter((alias) => alias.startsWith("at://")).map((alias) => alias.slice("at://".length)),
      pdsEndpoint: pds?.type === "AtprotoPersonalDataServer" ? pds.endpoint : undefined,
      signingKey: last.verificationMethods.atproto,
      rotationKeys: last.rotationKeys.map((didKey) => ({ didKey, server: didKey === this.identity.rotationKeyDid })),
    };
  }

  /** Places the person's did:key first in the rotation keys; a key listed lower moves up. */
  async add(did: string, typed: string, notice: { handle: string; email: string; language: Language }): Promise<string> {
    const parsed = parseRecoveryKey(typed);
    if (!parsed.ok) throw new OwnKeyError("invalid");
    const key = parsed.didKey;
    if (key === this.identity.rotationKeyDid) throw new OwnKeyError("serverKey");
    const last = await this.liveOperation(did);
    if (last.rotationKeys[0] === key) throw new OwnKeyError("already");
    const rotationKeys = withOwnKeyFirst(last.rotationKeys, key);
    if (rotationKeys.length > MAX_ROTATION_KEYS) throw new OwnKeyError("tooMany", { count: MAX_ROTATION_KEYS });
    await this.identity.submit(did, await this.identity.signUpdate(did, last, { ...fieldsOf(last), rotationKeys }));
    await this.options.onIdentityChanged(did);
    await this.tell(notice, key);
    return key;
  }

  /** Takes a key that is not this server's out of the rotation keys. */
  async remove(did: string, key: string): Promise<void> {
    if (key === this.identity.rotationKeyDid) throw new OwnKeyError("serverKey");
    const last = await this.liveOperation(did);
    if (!last.rotationKeys.includes(key)) throw new OwnKeyError("notThere");
    const rotationKeys = last.rotationKeys.filter((candidate) => candidate !== key);
    await this.identity.submit(did, await this.identity.signUpdate(did, last, { ...fieldsOf(last), rotationKeys }));
    await this.options.onIdentityChanged(did);
  }

  private async liveOperation(did: string) {
    const last = await this.identity.lastOperation(did);
    if (!last) throw new IdentityError("plc_not_registered", `${did} is not registered at the PLC directory`);
    if (last.type === "plc_tombstone") throw new IdentityError("plc_tombstoned", `${did} was tombstoned at the PLC directory`);
    return last;
  }

  /** The account's address is told a key now rules its identity: a stolen session and password must not do it unseen. */
  private async tell(notice: { handle: string; email: string; language: Language }, key: string): Promise<void> {
    if (!this.mailer) return;
    try {
      await this.mailer.send({ to: notice.email, ...this.options.addedEmail({ service: this.options.serviceName, handle: notice.handle, key }, notice.language) });
    } catch (error) {
      this.options.onSendError(error);
    }
  }
}
