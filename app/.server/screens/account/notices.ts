/**
 * One-line confirmations shown after a form post redirects (post/redirect/get):
 * the redirect names a notice by key, the page shows its fixed text, so
 * nothing from the address bar is ever echoed.
 */
const NOTICES = {
  "signed-in": "You are signed in.",
  "signed-out": "You are signed out.",
  revoked: "Access revoked. The app's tokens no longer work; it has to ask you again.",
  "session-ended": "That browser is signed out.",
  "others-ended": "Every other browser is signed out.",
  "passkey-added": "Passkey added. You can now sign in with it.",
  "passkey-renamed": "Passkey renamed.",
  "passkey-deleted": "Passkey deleted.",
  "password-changed": "Password changed. Every other browser was signed out.",
  "identity-confirmed": "Thanks, that's you. You can add a passkey now.",
  "secure-confirmed": "Thanks, that's you. You can secure your account now.",
  "account-secured": "Done: your passkeys are removed and every other browser is signed out. Connected apps keep their access.",
  "account-secured-apps": "Done: your passkeys are removed, every other browser is signed out and every app is disconnected.",
} as const;

export type NoticeKey = keyof typeof NOTICES;

export function noticeOf(request: Request): string | undefined {
  const key = noticeKeyOf(request);
  return key ? NOTICES[key] : undefined;
}

/** Which notice the address names, when it names a known one. */
export function noticeKeyOf(request: Request): NoticeKey | undefined {
  const key = new URL(request.url).searchParams.get("notice");
  return key && key in NOTICES ? (key as NoticeKey) : undefined;
}

export function withNotice(path: string, notice: NoticeKey): string {
  return `${path}?notice=${notice}`;
}
