import { P256Keypair, Secp256k1Keypair } from "@atproto/crypto";
import { describe, expect, it } from "vitest";
import { signPlcOperationInput, submittedOperation } from "./plc-operation-input.ts";
import { isUsableDidKey, parseRecoveryKey, withOwnKeyFirst } from "./rotation-keys.ts";

/** The rules a person's key and an operation's fields meet before this server signs or sends anything (docs/decisions/0050). */
describe("keys and operation fields", () => {
  it("a recovery key is a did:key of P-256 or secp256k1, pasted with or without spaces around it", async () => {
    const p256 = (await P256Keypair.create()).did();
    const k256 = (await Secp256k1Keypair.create()).did();
    expect(parseRecoveryKey(`  ${p256}\n`)).toEqual({ ok: true, didKey: p256 });
    expect(parseRecoveryKey(k256)).toEqual({ ok: true, didKey: k256 });
    for (const text of ["", "did:key:", "did:key:zNope", `did:key:z${"1".repeat(120)}`, "did:web:example.com", p256.slice(0, -2), `${p256}x`]) {
      expect(parseRecoveryKey(text).ok, text).toBe(false);
    }
    // Ed25519 is a did:key the directory does not take as a rotation key.
    expect(parseRecoveryKey("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK").ok).toBe(false);
    expect(isUsableDidKey(` ${p256}`)).toBe(false);
  });

  it("the person's key goes first, above this server's, and a key already listed moves up rather than appearing twice", () => {
    expect(withOwnKeyFirst(["did:key:server"], "did:key:mine")).toEqual(["did:key:mine", "did:key:server"]);
    expect(withOwnKeyFirst(["did:key:other", "did:key:server", "did:key:mine"], "did:key:mine")).toEqual(["did:key:mine", "did:key:other", "did:key:server"]);
  });

  it("signPlcOperation's changes: 1 to 5 distinct usable rotation keys, usable verification keys, bounded aliases and services", async () => {
    const keys = await Promise.all(Array.from({ length: 6 }, async () => (await Secp256k1Keypair.create()).did()));
    const ok = (input: unknown) => signPlcOperationInput.safeParse(input).success;
    expect(ok({ token: "AAAAA-AAAAA", rotationKeys: keys.slice(0, 5), verificationMethods: { atproto: keys[0] }, alsoKnownAs: ["at://a.test"], services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://pds.example" } } })).toBe(true);
    expect(ok({})).toBe(true);
    expect(ok({ rotationKeys: keys })).toBe(false);
    expect(ok({ rotationKeys: [] })).toBe(false);
    expect(ok({ rotationKeys: [keys[0], keys[0]] })).toBe(false);
    expect(ok({ rotationKeys: ["did:key:zNope"] })).toBe(false);
    expect(ok({ verificationMethods: { atproto: "did:web:x" } })).toBe(false);
    expect(ok({ verificationMethods: { "no spaces": keys[0] } })).toBe(false);
    expect(ok({ verificationMethods: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, keys[0]])) })).toBe(false);
    expect(ok({ alsoKnownAs: Array.from({ length: 11 }, () => "at://a.test") })).toBe(false);
    expect(ok({ alsoKnownAs: ["x".repeat(513)] })).toBe(false);
    expect(ok({ services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://pds.example", extra: 1 } } })).toBe(false);
    expect(ok({ token: "x".repeat(65) })).toBe(false);
  });

  it("submitPlcOperation takes a signed plc_operation only, with nothing beside its fields", async () => {
    const key = (await Secp256k1Keypair.create()).did();
    const operation = { type: "plc_operation", rotationKeys: [key], verificationMethods: { atproto: key }, alsoKnownAs: [], services: {}, prev: null, sig: "c2ln" };
    expect(submittedOperation.safeParse(operation).success).toBe(true);
    expect(submittedOperation.safeParse({ ...operation, extra: true }).success).toBe(false);
    expect(submittedOperation.safeParse({ ...operation, type: "plc_tombstone" }).success).toBe(false);
    expect(submittedOperation.safeParse({ ...operation, sig: undefined }).success).toBe(false);
  });
});
