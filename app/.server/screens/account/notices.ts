import { accountText } from "../../../components/account/text.ts";

/**
 * One-line confirmations shown after a form post redirects (post/redirect/get):
 * the redirect names a notice by key, the page shows its fixed text, so
 * nothing from the address bar is ever echoed.
 */
const NOTICES = accountText.notices;

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
