import nodemailer, { type Transporter } from "nodemailer";

/** One email: plain text (every mail client shows it; no remote content, nothing to track). */
export type EmailMessage = { to: string; subject: string; text: string };

/** Sends email: recovery links, typed codes and notices, whose words `email/templates.ts` writes. */
export interface Mailer {
  send(message: EmailMessage): Promise<void>;
}

/**
 * Email through the operator's SMTP server (ATRIUM_SMTP_URL, ATRIUM_EMAIL_FROM) with nodemailer: smtp:// upgrades
 * with STARTTLS when offered (nodemailer's URL options such as ?requireTLS=true apply), smtps:// is TLS from the
 * start. One transport per process; each email opens its own connection (recovery email is rare, and an idle
 * pool would hold a connection to the operator's server for nothing).
 */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(message: EmailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    this.transport.close();
  }
}
