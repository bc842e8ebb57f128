import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, unsafeConfigWarnings } from "../config.ts";

/** ATRIUM_SMTP_URL and ATRIUM_EMAIL_FROM (docs/decisions/0020). */
describe("email settings", () => {
  // An https issuer is given its keys from the environment (docs/decisions/0050).
  const https = { PUBLIC_URL: "https://pds.example.com", ATRIUM_PLC_ROTATION_KEY: "1".repeat(64), ATRIUM_KEY_ENCRYPTION_KEY: "2".repeat(64) };

  it("no email by default", () => {
    expect(loadConfig({}).email).toBeUndefined();
  });

  it("takes smtp:// and smtps:// URLs with the sender, and recovery links last 15 minutes", () => {
    const config = loadConfig({ ATRIUM_SMTP_URL: "smtps://atrium:p%40ss@mail.example.com:465", ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>" });
    expect(config.email).toEqual({ smtpUrl: "smtps://atrium:p%40ss@mail.example.com:465", from: "Atrium <no-reply@example.com>" });
    expect(config.lifetimes.recoveryCode).toBe(15 * 60_000);
    expect(loadConfig({ ATRIUM_SMTP_URL: "smtp://mail.example.com:587", ATRIUM_EMAIL_FROM: "no-reply@example.com" }).email?.from).toBe("no-reply@example.com");
  });

  it("refuses other schemes, a missing host, a bad sender, and a URL without its sender", () => {
    for (const url of ["https://mail.example.com", "mail.example.com:587", "smtp://"]) {
      expect(() => loadConfig({ ATRIUM_SMTP_URL: url, ATRIUM_EMAIL_FROM: "a@example.com" }), url).toThrow(ConfigError);
    }
    expect(() => loadConfig({ ATRIUM_SMTP_URL: "smtp://mail.example.com", ATRIUM_EMAIL_FROM: "not an address" })).toThrow(/ATRIUM_EMAIL_FROM/);
    expect(() => loadConfig({ ATRIUM_SMTP_URL: "smtp://mail.example.com" })).toThrow(/ATRIUM_EMAIL_FROM must be set/);
  });

  it("warns about plain smtp:// to another host unless TLS is required", () => {
    const warningsFor = (url: string) => unsafeConfigWarnings(loadConfig({ ...https, ATRIUM_SMTP_URL: url, ATRIUM_EMAIL_FROM: "a@example.com" }));
    expect(warningsFor("smtp://u:p@mail.example.com:587").join("\n")).toMatch(/mail\.example\.com with smtp:\/\//);
    expect(warningsFor("smtp://u:p@mail.example.com:587?requireTLS=true")).toEqual([]);
    expect(warningsFor("smtps://u:p@mail.example.com:465")).toEqual([]);
    expect(warningsFor("smtp://127.0.0.1:2525")).toEqual([]);
  });
});
