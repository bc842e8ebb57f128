import type { Translate } from "../../i18n/translate.ts";

/**
 * One-line confirmations shown after a form post redirects (post/redirect/get):
 * the redirect names a notice by key, the page shows its fixed text (the
 * catalogue's account:notices.<key>, in the screen's language), so nothing
 * from the address bar is ever echoed.
 */
const NOTICES = [
  "signed-in",
  "signed-out",
  "signed-out-all",
  "password-reset",
  "account-switched",
  "revoked",
  "session-ended",
  "others-ended",
  "passkey-added",
  "passkey-renamed",
  "passkey-deleted",
  "password-changed",
  "identity-confirmed",
  "secure-confirmed",
  "account-secured",
  "account-secured-apps",
  "deletion-code-sent",
  "account-deleted",
  "email-code-sent",
  "email-changed",
  "email-confirmed",
  "account-deactivated",
  "account-reactivated",
  "status-confirmed",
  "handle-changed",
  "app-password-revoked",
  "sign-in-code-on",
  "sign-in-code-off",
  "password-session-ended",
  "own-key-added",
  "own-key-removed",
  "signed-up",
  "email-confirmation-sent",
  "email-address-confirmed",
  "permission-taken-back",
  "app-password-chat-taken-back",
  "sign-in-notices-on",
  "sign-in-notices-off",
] as const;

export type NoticeKey = (typeof NOTICES)[number];

export function noticeOf(request: Request, t: Translate): string | undefined {
  const key = noticeKeyOf(request);
  return key ? t(`account:notices.${key}`) : undefined;
}

/** Which notice the address names, when it names a known one. */
export function noticeKeyOf(request: Request): NoticeKey | undefined {
  const key = new URL(request.url).searchParams.get("notice");
  return NOTICES.find((known) => known === key);
}

export function withNotice(path: string, notice: NoticeKey): string {
  return `${path}?notice=${notice}`;
}
