import type { Config, DatabaseSettings } from "./types.ts";
import { isLoopbackHost, parsedUrl } from "./parsers.ts";

/** Loud warnings for settings that are unsafe in production. */
export function unsafeConfigWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.allowPrivateClients) {
    warnings.push(
      "ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS is on: client metadata may be fetched over plain http and from loopback or private addresses. Never enable this in production.",
    );
  }
  if (config.testClockFile !== undefined) {
    warnings.push(`ATRIUM_TEST_CLOCK_FILE is set: this server's clock is moved by ${config.testClockFile}. A test setting; never set it in production.`);
  }
  if (config.testFastPasswordHashes) {
    warnings.push("ATRIUM_TEST_FAST_PASSWORD_HASHES is on: new password hashes are weak. A test setting; never set it in production.");
  }
  for (const [service, url] of Object.entries(config.proxy.pinned)) {
    const target = parsedUrl(url);
    if (target?.protocol === "http:" && !isLoopbackHost(target.hostname)) {
      warnings.push(`Calls for ${service} go to ${url} over plain http: the service tokens and what the apps read cross the network in clear. Use https unless that network is private to you.`);
    }
  }
  if (config.plc.rotationKeyHex === undefined) {
    warnings.push(
      "ATRIUM_PLC_ROTATION_KEY is not set: the rotation key that can rewrite every account's DID document is generated and kept in the database, so a copy of the database can. A development setting; an https issuer refuses to start without it.",
    );
  }
  if (config.keyEncryption.keyHex === undefined) {
    warnings.push(
      "ATRIUM_KEY_ENCRYPTION_KEY is not set: the key that seals the accounts' signing keys is generated and kept in the database beside them, so a copy of the database signs as every account. A development setting; an https issuer refuses to start without it.",
    );
  }
  if (config.plc.directoryUrl.startsWith("http:")) {
    warnings.push(`ATRIUM_PLC_DIRECTORY_URL is ${config.plc.directoryUrl}: a development PLC directory on loopback. Accounts registered there exist nowhere else on the network.`);
  }
  if (config.publicUrl.protocol === "http:") {
    warnings.push(`The issuer ${config.issuer} uses plain http: fine for local development only.`);
  }
  const smtp = config.email ? new URL(config.email.smtpUrl) : undefined;
  if (smtp && smtp.protocol === "smtp:" && !isLoopbackHost(smtp.hostname) && smtp.searchParams.get("requireTLS") !== "true") {
    warnings.push(
      `ATRIUM_SMTP_URL reaches ${smtp.hostname} with smtp:// and does not insist on TLS: the SMTP password and the recovery links cross the network in clear if STARTTLS is stripped. Use smtps:// or add ?requireTLS=true.`,
    );
  }
  const { signUp } = config;
  // A captcha guards the form only: com.atproto.server.createAccount asks for none, as the reference's (docs/decisions/0052).
  if (signUp.enabled && !signUp.inviteRequired) {
    const captcha = signUp.captcha ? "the captcha (ATRIUM_HCAPTCHA_SITE_KEY) guards the sign-up form only, not com.atproto.server.createAccount" : "no captcha is set";
    warnings.push(
      `Anyone may create accounts here: ATRIUM_INVITE_REQUIRED is off and ${captcha}. Only ${signUp.perAddressPerHour} per hour per client address hold back a script that makes accounts by the thousand. Require invite codes, or turn sign-up off (ATRIUM_SIGNUP=off).`,
    );
  }
  if (config.database.engine === "postgresql" && config.blobStore.kind === "disk") {
    warnings.push(
      `ATRIUM_BLOB_DIRECTORY is ${config.blobStore.folder} with PostgreSQL: every server process, on every machine, must see this same folder (a shared file system); a blob uploaded through a machine that keeps it elsewhere is missing on the others. Unset it to keep the blobs in the database, which every process reaches.`,
    );
  }
  const plaintextDatabase = plaintextDatabaseHost(config.database);
  if (plaintextDatabase) {
    warnings.push(
      `DATABASE_URL reaches PostgreSQL at ${plaintextDatabase} without TLS (no sslmode=require or verify-full): tokens' hashes and account data cross the network in clear. Add ?sslmode=verify-full (or require) unless that network is private to you.`,
    );
  }
  return warnings;
}

/** The host of a PostgreSQL URL that is not on this machine and does not ask for TLS; undefined otherwise. */
function plaintextDatabaseHost(database: DatabaseSettings): string | undefined {
  if (database.engine !== "postgresql") return undefined;
  const url = parsedUrl(database.url);
  if (!url) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const local = host === "" || host === "localhost" || host === "::1" || host.startsWith("127.") || url.searchParams.get("host")?.startsWith("/");
  const tls = ["require", "verify-ca", "verify-full"].includes(url.searchParams.get("sslmode") ?? "") || url.searchParams.get("ssl") === "true";
  return local || tls ? undefined : host;
}
