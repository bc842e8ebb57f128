import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import type { LimitStore } from "../security/limit-store.ts";
import { randomToken, sha256Base64url } from "../util/crypto.ts";
import { DAY, HOUR } from "../util/time.ts";
import type { CountryDatabase } from "./country-database.ts";
import type { EndTarget, NoticeStore } from "./notice-store.ts";

/**
 * "A new browser signed in", "a new app was given access" (docs/decisions/0056): an email to the account's address,
 * with a one-click link that ends exactly that browser session or that app's access. What the emails say is
 * `email/templates.ts`'s; this decides when one is sent, bounds them, and keeps the links.
 */

/** What a notice email says, in a language. `country`: a two-letter code, only with ATRIUM_COUNTRY_DATABASE. */
export type NoticeValues = { service: string; handle: string; when: number; country?: string; link: string; settings: string };
export type NewBrowserEmail = (values: NoticeValues & { userAgent: string | null }, language: Language) => { subject: string; text: string };
export type NewAppEmail = (values: NoticeValues & { app: string }, language: Language) => { subject: string; text: string };

/**
 * At most this many notices per account per hour: a person signing in on a new phone and a new laptop and allowing
 * an app is told of each, and whoever holds the password cannot make this server mail the person (or anyone whose
 * address an account was made with) more than this, however many browsers they script. Past it, the sign-in goes on
 * and nothing is sent: the person has been told within the hour already.
 */
export const NOTICES_PER_HOUR = 3;

/**
 * How long an email's link works: a week covers an email read late (a weekend, a holiday) while a thief who takes
 * the mailbox later gets a dead link; the browser session or app it names can still be ended from the account area.
 */
export const LINK_LIFETIME_MS = 7 * DAY;

/** A browser that signed in, as startSession knows it. */
export type BrowserSignIn = { accountDid: string; deviceHash: string; userAgent: string | null; address: string | undefined; language: Language };

/** An app given access for the first time: its client_id, the name the consent screen showed, when the consent began. */
export type AppGrant = { accountDid: string; clientId: string; appName: string; since: number; address: string | undefined; language: Language };

/** A link as its page shows it: still usable, or why not. */
export type LinkState =
  | { state: "unknown" }
  | { state: "used" | "expired" | "live"; accountDid: string; handle: string; target: EndTarget; label: string; sentAt: number };

/** The existing ways to end what a link names (docs/decisions/0056 reuses them). */
export type Enders = {
  browser(accountDid: string, deviceHash: string): Promise<void>;
  /** The app's access that began at `since`; one given again since is another, left alone. */
  app(accountDid: string, clientId: string, since: number): Promise<void>;
};

export type SignInNoticeOptions = {
  issuer: string;
  serviceName: string;
  newBrowser: NewBrowserEmail;
  newApp: NewAppEmail;
  countries?: CountryDatabase;
  ends: Enders;
  now: () => number;
  /** A failure after the sign-in or consent is done: reported, never thrown at it. */
  onError: (message: string, error: unknown) => void;
  /** A notice not sent: the account had its NOTICES_PER_HOUR already (many new browsers in an hour deserve a look). */
  onBounded: (accountDid: string) => void;
};

export class SignInNotices {
  constructor(
    private readonly store: NoticeStore,
    private readonly limits: LimitStore,
    private readonly mailer: Mailer | undefined,
    private readonly options: SignInNoticeOptions,
  ) {}

  /** This server can send them (ATRIUM_SMTP_URL): otherwise the setting says so, and nothing is attempted. */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  /** The account's setting, and the address the emails go to (one read of the account). */
  async settingOf(accountDid: string): Promise<{ on: boolean; email: string }> {
    const recipient = await this.store.recipient(accountDid);
    return { on: recipient?.signInNotices ?? false, email: recipient?.email ?? "" };
  }

  async setEnabled(accountDid: string, on: boolean): Promise<void> {
    await this.store.setSignInNotices(accountDid, on, this.options.now());
  }

  /**
   * The browser where the account was just made: it is the account's first, told of nothing, and later sign-ins
   * from other browsers are (an account made elsewhere gets its first browser at its first sign-in).
   */
  async accountCreatedIn(accountDid: string): Promise<void> {
    await this.guard("Recording an account's first browser failed", () => this.store.claimFirstBrowser(accountDid, this.options.now()));
  }

  /**
   * A browser that had not signed in to this account before (it holds no device entry for it: docs/decisions/0009)
   * just did. The account's first browser is told of nothing; any later one is. Never throws: the sign-in is done.
   */
  async browserSignedIn(signIn: BrowserSignIn): Promise<void> {
    await this.guard("Telling of a new browser's sign-in failed", async () => {
      if (await this.store.claimFirstBrowser(signIn.accountDid, this.options.now())) return;
      await this.tell(signIn.accountDid, { kind: "browser", deviceHash: signIn.deviceHash }, signIn.userAgent ?? "", signIn.address, signIn.language, (values, language) =>
        this.options.newBrowser({ ...values, userAgent: signIn.userAgent }, language),
      );
    });
  }

  /** An app was given this account's consent for the first time (or the first since it was disconnected). Never throws. */
  async appAllowed(grant: AppGrant): Promise<void> {
    await this.guard("Telling of a new app failed", () =>
      this.tell(grant.accountDid, { kind: "app", clientId: grant.clientId, since: grant.since }, grant.appName, grant.address, grant.language, (values, language) =>
        this.options.newApp({ ...values, app: grant.appName }, language),
      ),
    );
  }

  /** What the link of `token` names, and whether it still works. */
  async link(token: string): Promise<LinkState> {
    if (!/^end-[A-Za-z0-9_-]{20,100}$/.test(token)) return { state: "unknown" };
    const found = await this.store.findLink(sha256Base64url(token));
    if (!found) return { state: "unknown" };
    const state = found.usedAt !== null ? "used" : found.expiresAt <= this.options.now() ? "expired" : "live";
    return { state, accountDid: found.accountDid, handle: found.handle, target: found.target, label: found.label, sentAt: found.createdAt };
  }

  /**
   * Ends what the link of `token` names (`link`, as `link(token)` read it), for `accountDid` (who has just proven to be
   * the account's person), then spends the link: a failure on the way leaves it usable. Two clicks at once both end the
   * same thing (ending is idempotent) and one spends the link. A link of another account, used or expired ends nothing.
   */
  async end(token: string, link: LinkState, accountDid: string): Promise<LinkState["state"] | "ended"> {
    if (link.state !== "live") return link.state;
    if (link.accountDid !== accountDid) return "unknown";
    const { ends } = this.options;
    if (link.target.kind === "browser") await ends.browser(accountDid, link.target.deviceHash);
    else await ends.app(accountDid, link.target.clientId, link.target.since);
    return (await this.store.spendLink(sha256Base64url(token), this.options.now())) ? "ended" : "used";
  }

  private async tell(
    accountDid: string,
    target: EndTarget,
    label: string,
    address: string | undefined,
    language: Language,
    write: (values: NoticeValues, language: Language) => { subject: string; text: string },
  ): Promise<void> {
    const mailer = this.mailer;
    if (!mailer) return;
    const recipient = await this.store.recipient(accountDid);
    if (!recipient?.signInNotices) return;
    const now = this.options.now();
    const { spent } = await this.limits.spendWithin([{ key: `sign-in-notice:${accountDid}`, amount: 1, limit: NOTICES_PER_HOUR, windowEndsAt: now + HOUR }], now);
    if (!spent) return this.options.onBounded(accountDid);
    const token = randomToken("end");
    await this.store.addLink({ tokenHash: sha256Base64url(token), accountDid, target, label: label.slice(0, 512), createdAt: now, expiresAt: now + LINK_LIFETIME_MS });
    const { issuer, serviceName } = this.options;
    const message = write(
      {
        service: serviceName,
        handle: recipient.handle,
        when: now,
        country: this.options.countries?.countryOf(address),
        link: `${issuer}/account/end?${new URLSearchParams({ token })}`,
        settings: `${issuer}/account/sessions`,
      },
      language,
    );
    // The sign-in or consent does not wait for the mail server: its answer goes out while the email is sent.
    void mailer.send({ to: recipient.email, ...message }).catch((error: unknown) => this.options.onError("Sending a new-sign-in email failed", error));
  }

  private async guard(message: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (error) {
      this.options.onError(message, error);
    }
  }
}
