/**
 * A real SMTP server for the tests (smtp-server on 127.0.0.1, a free port): the server under test sends through
 * it with nodemailer as it would through the operator's; each message is parsed with mailparser. AUTH PLAIN/LOGIN
 * with the given user and password (no TLS: loopback only).
 */
import type { AddressInfo } from "node:net";
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer } from "smtp-server";

export type TestSmtp = {
  /** ATRIUM_SMTP_URL for the server under test. */
  url: string;
  /**
   * The messages received, but the new-sign-in and new-app notices (docs/decisions/0056), which any test that signs
   * in from a second browser or allows an app causes: those are in `notices`, so that the tests of other emails read
   * theirs alone.
   */
  messages: ParsedMail[];
  notices: ParsedMail[];
  /** The next message not yet taken (waits for it). */
  next(): Promise<ParsedMail>;
  /** Waits until `count` messages received, notices included, match `match` (taken or not); returns them. */
  received(match: (mail: ParsedMail) => boolean, count: number): Promise<ParsedMail[]>;
  stop(): Promise<void>;
};

export async function startSmtpServer(credentials = { user: "atrium", password: "smtp pass/word" }): Promise<TestSmtp> {
  const messages: ParsedMail[] = [];
  const notices: ParsedMail[] = [];
  let taken = 0;
  const waiting: (() => void)[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.user && auth.password === credentials.password) callback(null, { user: auth.username });
      else callback(new Error("Invalid username or password"));
    },
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          (isNotice(mail) ? notices : messages).push(mail);
          for (const wake of waiting.splice(0)) wake();
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}`,
    messages,
    notices,
    async next() {
      while (messages.length <= taken) await new Promise<void>((resolve) => waiting.push(resolve));
      return messages[taken++]!;
    },
    async received(match, count) {
      const all = () => [...messages, ...notices].filter(match);
      while (all().length < count) await new Promise<void>((resolve) => waiting.push(resolve));
      return all();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A new-sign-in or new-app notice: the one email with a link that ends a browser's sessions or an app's access. */
function isNotice(mail: ParsedMail): boolean {
  return /\/account\/end\?token=end-/.test(mail.text ?? "");
}

/** The reset link in a recovery email. */
export function resetLinkIn(mail: ParsedMail): string {
  const link = /https?:\/\/\S+\/account\/reset\?code=rec-[A-Za-z0-9_-]+/.exec(mail.text ?? "")?.[0];
  if (!link) throw new Error(`no reset link in: ${mail.text}`);
  return link;
}

/** The code to type in an email (docs/decisions/0030): ten characters in two groups of five. */
export function typedCodeIn(mail: ParsedMail): string {
  const code = /\b([0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5})\b/.exec(mail.text ?? "")?.[1];
  if (!code) throw new Error(`no typed code in: ${mail.text}`);
  return code;
}
