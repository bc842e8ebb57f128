import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ParsedMail } from "mailparser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CookieJar } from "../helpers/consent.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { fetchFrom, type SourceFetch } from "../helpers/raw-http.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer } from "../helpers/test-server.ts";

/**
 * docs/decisions/0056: with ATRIUM_COUNTRY_DATABASE, a new-sign-in email names the country of the network the sign-in
 * came from: the address the trusted proxy gave (docs/decisions/0006), never one the client wrote. Through a real
 * nginx, from loopback source addresses, with a fixture file that puts 127.0.0.2 in France and 127.0.0.3 in Japan.
 * Engine-independent (SQLITE_ONLY): the store steps are sign-in-notices.test.ts's, on both engines.
 */

const PASSWORD = "another horse battery";
const folder = mkdtempSync(join(tmpdir(), "atrium-countries-"));
const countries = join(folder, "countries.csv");
writeFileSync(countries, ["127.0.0.2,127.0.0.2,FR", "127.0.0.3,127.0.0.3,JP", "2001:db8::,2001:db8::ffff,DE", ""].join("\n"));

let smtp: TestSmtp;
let proxied: ProxiedServers;

beforeAll(async () => {
  smtp = await startSmtpServer();
  proxied = await startBehindNginx(1, {
    ATRIUM_TRUST_PROXY: "1",
    ATRIUM_SMTP_URL: smtp.url,
    ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>",
    ATRIUM_COUNTRY_DATABASE: countries,
  });
  await createAccount(proxied.servers[0]!, { handle: "bob.test", email: "bob@example.com", password: PASSWORD });
});
afterAll(async () => {
  await proxied?.stop();
  await smtp?.stop();
});

/** A browser at `client` signing in to the account area through nginx; `forwardedFor`: what it claims to be. */
async function signInFrom(client: SourceFetch, forwardedFor?: string): Promise<void> {
  const jar = new CookieJar();
  const claimed: Record<string, string> = forwardedFor ? { "X-Forwarded-For": forwardedFor } : {};
  const page = await client(`${proxied.issuer}/account`, { headers: claimed, redirect: "manual" });
  // undici's own Response (fetchFrom dispatches through it): the same Set-Cookie headers.
  jar.store(page as unknown as Response);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  const response = await client(`${proxied.issuer}/account`, {
    method: "POST",
    headers: { ...claimed, "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: proxied.issuer },
    body: new URLSearchParams({ csrf_token: csrf, identifier: "bob.test", password: PASSWORD, next: "/account" }),
    redirect: "manual",
  });
  await response.arrayBuffer();
  if (response.status !== 303) throw new Error(`sign-in failed (${response.status})`);
}

const toBob = (mail: ParsedMail) => (mail.to && "text" in mail.to ? mail.to.text : "") === "bob@example.com";

describe("the network's country in a new-sign-in email, behind nginx", () => {
  it("names the country of the address nginx saw, whatever X-Forwarded-For the browser wrote", async () => {
    // The account's first browser: told of nothing.
    await signInFrom(fetchFrom("127.0.0.3"));
    await signInFrom(fetchFrom("127.0.0.2"), "127.0.0.3, 2001:db8::1");
    const [mail] = await smtp.received(toBob, 1);
    expect(mail!.text).toContain("Network's country: France");
    expect(mail!.text).not.toMatch(/Japan|Germany/);
    await signInFrom(fetchFrom("127.0.0.3"));
    expect((await smtp.received(toBob, 2))[1]!.text).toContain("Network's country: Japan");
  });

  it("says nothing of where when the address is in no range", async () => {
    await signInFrom(fetchFrom("127.0.0.4"));
    const mails = await smtp.received(toBob, 3);
    expect(mails[2]!.text).not.toMatch(/country/i);
  });
});

describe("a country file the server cannot use", () => {
  it.each([
    ["malformed", "127.0.0.1,127.0.0.9,FR\n127.0.0.5,not an address,JP\n", /ATRIUM_COUNTRY_DATABASE: .*bad\.csv, line 2: an address that is not an IP address/],
    ["missing", undefined, /ATRIUM_COUNTRY_DATABASE: cannot read .*missing\.csv/],
  ])("stops the start, naming the problem (%s)", async (name, text, message) => {
    const path = join(folder, text === undefined ? "missing.csv" : "bad.csv");
    if (text !== undefined) writeFileSync(path, text);
    const started = startTestServer({ ATRIUM_COUNTRY_DATABASE: path });
    await expect(started).rejects.toThrow(message);
  });
});
