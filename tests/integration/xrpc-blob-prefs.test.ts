import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { createDpopProof } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { blobCid, missingPermission, SAMPLES, scopedSession, uploadBlob, type ScopedSession, type XrpcErrorBody } from "../helpers/xrpc-extra.ts";

/**
 * com.atproto.repo.uploadBlob (blob:<mime>, declared then sniffed type) and
 * app.bsky.actor.get/putPreferences (rpc:<method>?aud=<app view>), docs/architecture.md, "Scopes and the data server".
 */

/** The default app view (did:web:api.bsky.app#bsky_appview) as it appears in a scope string: '#' percent-encoded. */
const APPVIEW_IN_SCOPE = "did:web:api.bsky.app%23bsky_appview";
const GET_PREFS_SCOPE = `rpc:app.bsky.actor.getPreferences?aud=${APPVIEW_IN_SCOPE}`;
const PUT_PREFS_SCOPE = `rpc:app.bsky.actor.putPreferences?aud=${APPVIEW_IN_SCOPE}`;

const PERSONAL_DETAILS = "app.bsky.actor.defs#personalDetailsPref";
const DECLARED_AGE = "app.bsky.actor.defs#declaredAgePref";

type BlobResponse = { blob: { $type: string; ref: { $link: string }; mimeType: string; size: number } };

let server: TestServer;
let small: TestServer;
let alice: { did: string; handle: string };

const sessions: Record<string, ScopedSession> = {};

beforeAll(async () => {
  [server, small] = await Promise.all([startTestServer(), startTestServer({ ATRIUM_BLOB_MAX_BYTES: "2048" })]);
  [alice] = await Promise.all([createAlice(server), createAlice(small)]);
  const wanted: Record<string, [TestServer, string]> = {
    images: [server, "atproto blob:image/*"],
    text: [server, "atproto blob:text/plain"],
    any: [server, "atproto blob:*/*"],
    generic: [server, "atproto transition:generic"],
    bare: [server, "atproto"],
    prefs: [server, `atproto ${GET_PREFS_SCOPE} ${PUT_PREFS_SCOPE}`],
    getPrefsOnly: [server, `atproto ${GET_PREFS_SCOPE}`],
    otherAud: [server, "atproto rpc:app.bsky.actor.getPreferences?aud=did:web:other.test%23bsky_appview"],
    smallAny: [small, "atproto blob:*/*"],
  };
  // One sign-in at a time, as one person signs in (simultaneous ones beyond the free attempts wait: docs/decisions/0009).
  for (const [name, [target, scope]] of Object.entries(wanted)) sessions[name] = await scopedSession(target, scope);
});
afterAll(async () => {
  await Promise.all([server?.stop(), small?.stop()]);
});

function expectInsufficientScope(result: { status: number; body: unknown; headers: Headers }, scope: string) {
  expect(result.status).toBe(403);
  expect(result.body).toMatchObject({ error: "InsufficientScope", message: missingPermission(scope) });
  expect(result.headers.get("www-authenticate")).toMatch(/^DPoP error="insufficient_scope"/);
}

describe("uploadBlob", () => {
  it("the tokens carry the scopes asked for", () => {
    expect(sessions.images!.tokens.scope).toBe("atproto blob:image/*");
    expect(sessions.any!.tokens.scope).toBe("atproto blob:*/*");
    expect(sessions.prefs!.tokens.scope.split(" ").sort()).toEqual(["atproto", GET_PREFS_SCOPE, PUT_PREFS_SCOPE].sort());
  });

  it("blob:image/* accepts a PNG and answers the blob ref", async () => {
    const result = await uploadBlob<BlobResponse>(sessions.images!, SAMPLES.png, "image/png");
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      blob: { $type: "blob", ref: { $link: await blobCid(SAMPLES.png) }, mimeType: "image/png", size: SAMPLES.png.byteLength },
    });
    const stored = await rowOf(
      server.database(),
      sql`SELECT "mimeType", "declaredType", "detectedType", "size" FROM "Blob" WHERE "did" = ${alice.did} AND "cid" = ${result.body.blob.ref.$link}`,
    );
    expect(stored).toEqual({ mimeType: "image/png", declaredType: "image/png", detectedType: "image/png", size: SAMPLES.png.byteLength });
  });

  it("a PNG declared as text/plain needs blob:image/png too (the bytes are sniffed)", async () => {
    const result = await uploadBlob(sessions.text!, SAMPLES.png, "text/plain");
    expectInsufficientScope(result, "blob:image/png");
  });

  it("blob:text/plain still accepts real plain text", async () => {
    const result = await uploadBlob<BlobResponse>(sessions.text!, SAMPLES.text, "text/plain; charset=utf-8");
    expect(result.status).toBe(200);
    expect(result.body.blob.mimeType).toBe("text/plain");
  });

  it("blob:image/* refuses a declared type outside images, naming it", async () => {
    const result = await uploadBlob(sessions.images!, SAMPLES.text, "text/plain");
    expectInsufficientScope(result, "blob:text/plain");
  });

  it("blob:*/* accepts the mismatched PNG and records the detected type", async () => {
    const result = await uploadBlob<BlobResponse>(sessions.any!, SAMPLES.png, "text/plain");
    expect(result.status).toBe(200);
    expect(result.body.blob).toMatchObject({ $type: "blob", mimeType: "image/png", size: SAMPLES.png.byteLength });
  });

  it("transition:generic accepts any blob", async () => {
    const result = await uploadBlob<BlobResponse>(sessions.generic!, SAMPLES.gif, "image/gif");
    expect(result.status).toBe(200);
    expect(result.body.blob).toMatchObject({ mimeType: "image/gif", size: SAMPLES.gif.byteLength, ref: { $link: await blobCid(SAMPLES.gif) } });
  });

  it("a token with only atproto is refused", async () => {
    const result = await uploadBlob(sessions.bare!, SAMPLES.png, "image/png");
    expectInsufficientScope(result, "blob:image/png");
  });

  it("a missing Content-Type is a 400 XRPC error", async () => {
    const result = await uploadBlob<XrpcErrorBody>(sessions.any!, SAMPLES.png, null);
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("InvalidRequest");
    expect(result.body.message).toMatch(/Content-Type/);
  });

  it("an empty blob is a 400", async () => {
    const result = await uploadBlob<XrpcErrorBody>(sessions.any!, new Uint8Array(0), "image/png");
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("InvalidRequest");
  });

  it("without a token the upload is 401, not stored", async () => {
    const response = await fetch(`${server.issuer}/xrpc/com.atproto.repo.uploadBlob`, {
      method: "POST",
      headers: { "Content-Type": "image/png" },
      body: SAMPLES.png,
    });
    expect(response.status).toBe(401);
  });

  it.each([
    ["jpeg", "image/jpeg"],
    ["gif", "image/gif"],
    ["webp", "image/webp"],
    ["mp4", "video/mp4"],
    ["json", "application/json"],
    ["text", "text/plain"],
    ["png", "image/png"],
  ] as const)("detects %s declared as application/octet-stream", async (sample, mimeType) => {
    const bytes = SAMPLES[sample];
    const result = await uploadBlob<BlobResponse>(sessions.any!, bytes, "application/octet-stream");
    expect(result.status).toBe(200);
    expect(result.body.blob).toEqual({ $type: "blob", ref: { $link: await blobCid(bytes) }, mimeType, size: bytes.byteLength });
  });

  it("keeps the declared type when the bytes are not recognised", async () => {
    const result = await uploadBlob<BlobResponse>(sessions.any!, SAMPLES.binary, "application/octet-stream");
    expect(result.status).toBe(200);
    expect(result.body.blob.mimeType).toBe("application/octet-stream");
  });
});

describe("uploadBlob size limit (ATRIUM_BLOB_MAX_BYTES=2048)", () => {
  it("accepts a blob at the limit", async () => {
    const bytes = new Uint8Array(2048).fill(0x61); // "aaaa…": plain text
    const result = await uploadBlob<BlobResponse>(sessions.smallAny!, bytes, "text/plain");
    expect(result.status).toBe(200);
    expect(result.body.blob.size).toBe(2048);
  });

  it("refuses 4096 bytes with 413 and an XRPC error body, never 500", async () => {
    const bytes = new Uint8Array(4096).fill(0x61);
    const result = await uploadBlob<XrpcErrorBody>(sessions.smallAny!, bytes, "text/plain");
    expect(result.status).toBe(413);
    expect(typeof result.body.error).toBe("string");
    expect(result.body.error).toMatch(/TooLarge/);
    expect(result.body.message).toMatch(/2048/);
    const count = await rowOf<{ n: number }>(small.database(), sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE "size" = 4096`);
    expect(count!.n).toBe(0);
  });

  /** Uploads `bytes` as a stream (chunked: no Content-Length); a dropped connection is reported as the status text. */
  async function chunkedUpload(session: ScopedSession, bytes: Uint8Array): Promise<{ status: number | string; text: string }> {
    const { client, accessToken } = session;
    const url = `${client.issuer}/xrpc/com.atproto.repo.uploadBlob`;
    const proof = await createDpopProof(client.key, { method: "POST", url, nonce: client.nonce, accessToken });
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 1024) controller.enqueue(bytes.slice(offset, offset + 1024));
        controller.close();
      },
    });
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "text/plain", Authorization: `DPoP ${accessToken}`, DPoP: proof },
        body: stream,
        duplex: "half",
      } as RequestInit);
      client.nonce = response.headers.get("DPoP-Nonce") ?? client.nonce;
      return { status: response.status, text: await response.text() };
    } catch (error) {
      return { status: `request failed: ${(error as Error).message}; cause: ${String((error as { cause?: unknown }).cause)}`, text: "" };
    }
  }

  it("accepts a chunked upload (no Content-Length) under the limit", async () => {
    const result = await chunkedUpload(sessions.smallAny!, new Uint8Array(1500).fill(0x62));
    expect(result.status, result.text).toBe(200);
    expect(JSON.parse(result.text)).toMatchObject({ blob: { mimeType: "text/plain", size: 1500 } });
  });

  it("refuses an oversized chunked upload (no Content-Length) with 413 and an XRPC error, never 500", async () => {
    const result = await chunkedUpload(sessions.smallAny!, new Uint8Array(4096).fill(0x61));
    expect(result.status, result.text).toBe(413);
    expect(JSON.parse(result.text)).toMatchObject({ error: expect.stringMatching(/TooLarge/) });
  });
});

describe("app.bsky.actor preferences", () => {
  it("getPreferences answers an empty list at first", async () => {
    const result = await sessions.prefs!.client.xrpc(sessions.prefs!.accessToken, "app.bsky.actor.getPreferences");
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ preferences: [] });
  });

  it("put then get round-trips with rpc:<method>?aud=<app view>", async () => {
    const { client, accessToken } = sessions.prefs!;
    const preferences = [
      { $type: "app.bsky.actor.defs#adultContentPref", enabled: false },
      { $type: "app.bsky.actor.defs#savedFeedsPrefV2", items: [{ id: "3l6ovcmm2vd2j", type: "timeline", value: "following", pinned: true }] },
    ];
    const put = await client.xrpc(accessToken, "app.bsky.actor.putPreferences", { json: { preferences } });
    expect(put.status).toBe(200);
    const got = await client.xrpc(accessToken, "app.bsky.actor.getPreferences");
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ preferences });
  });

  it("transition:generic may read and write preferences", async () => {
    const { client, accessToken } = sessions.generic!;
    const preferences = [{ $type: "app.bsky.actor.defs#contentLabelPref", label: "nsfw", visibility: "hide" }];
    const put = await client.xrpc(accessToken, "app.bsky.actor.putPreferences", { json: { preferences } });
    expect(put.status).toBe(200);
    const got = await client.xrpc(accessToken, "app.bsky.actor.getPreferences");
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ preferences });
  });

  /**
   * Issue 28, item 5: every app with the preferences permission read the birth date, and could write the declared age
   * it wanted. As the reference PDS: the birth date is for a full-access session only (which no OAuth app is), kept
   * when an app replaces the other preferences; the declared age is computed from it on read, never stored.
   */
  it("no OAuth app, whatever its scope, may set the birth date: 400 InvalidRequest, and nothing changes", async () => {
    for (const session of [sessions.generic!, sessions.prefs!]) {
      const before = await session.client.xrpc(session.accessToken, "app.bsky.actor.getPreferences");
      const preferences = [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: true }, { $type: PERSONAL_DETAILS, birthDate: "1980-01-01T00:00:00.000Z" }];
      const put = await session.client.xrpc<XrpcErrorBody>(session.accessToken, "app.bsky.actor.putPreferences", { json: { preferences } });
      expect(put.status).toBe(400);
      expect(put.body).toEqual({ error: "InvalidRequest", message: `Do not have authorization to set preferences: ${PERSONAL_DETAILS}` });
      expect((await session.client.xrpc(session.accessToken, "app.bsky.actor.getPreferences")).body).toEqual(before.body);
    }
  });

  it("the holder's birth date is never given to an app, which reads the age computed from it; an app's write keeps it and stores no age", async () => {
    const { client, accessToken } = sessions.prefs!;
    // The birth date as the account holder's own full-access session stored it (the Bluesky app's sign-up).
    const seventeen = new Date(Date.now() - (17 * 365 + 200) * 86_400_000).toISOString();
    const holders = [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: false }, { $type: PERSONAL_DETAILS, birthDate: seventeen }];
    await execute(server.database(), sql`INSERT INTO "Preferences" ("did", "value", "updatedAt") VALUES (${alice.did}, ${JSON.stringify(holders)}, ${at(Date.now())})
      ON CONFLICT ("did") DO UPDATE SET "value" = excluded."value"`);
    const minor = { $type: DECLARED_AGE, isOverAge13: true, isOverAge16: true, isOverAge18: false };
    expect((await client.xrpc(accessToken, "app.bsky.actor.getPreferences")).body).toEqual({ preferences: [holders[0], minor] });

    const claimed = [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: true }, { $type: DECLARED_AGE, isOverAge13: true, isOverAge16: true, isOverAge18: true }];
    expect((await client.xrpc(accessToken, "app.bsky.actor.putPreferences", { json: { preferences: claimed } })).status).toBe(200);
    expect((await client.xrpc(accessToken, "app.bsky.actor.getPreferences")).body).toEqual({ preferences: [claimed[0], minor] });
    const stored = JSON.parse((await rowOf<{ value: string }>(server.database(), sql`SELECT "value" FROM "Preferences" WHERE "did" = ${alice.did}`))!.value) as unknown[];
    expect(stored).toEqual([holders[1], claimed[0]]);
  });

  it("a token without the rpc permission is refused, naming it", async () => {
    const { client, accessToken } = sessions.bare!;
    expectInsufficientScope(await client.xrpc(accessToken, "app.bsky.actor.getPreferences"), GET_PREFS_SCOPE);
    expectInsufficientScope(await client.xrpc(accessToken, "app.bsky.actor.putPreferences", { json: { preferences: [] } }), PUT_PREFS_SCOPE);
  });

  it("getPreferences permission does not cover putPreferences", async () => {
    const { client, accessToken } = sessions.getPrefsOnly!;
    expect((await client.xrpc(accessToken, "app.bsky.actor.getPreferences")).status).toBe(200);
    const put = await client.xrpc(accessToken, "app.bsky.actor.putPreferences", { json: { preferences: [] } });
    expectInsufficientScope(put, PUT_PREFS_SCOPE);
  });

  it("an rpc permission for another audience does not count", async () => {
    const { client, accessToken } = sessions.otherAud!;
    expectInsufficientScope(await client.xrpc(accessToken, "app.bsky.actor.getPreferences"), GET_PREFS_SCOPE);
  });

  it("blob permissions do not cover preferences", async () => {
    const { client, accessToken } = sessions.any!;
    expectInsufficientScope(await client.xrpc(accessToken, "app.bsky.actor.getPreferences"), GET_PREFS_SCOPE);
  });

  it("a preference whose $type is not app.bsky.* is a 400 and changes nothing", async () => {
    const { client, accessToken } = sessions.prefs!;
    const before = await client.xrpc(accessToken, "app.bsky.actor.getPreferences");
    const put = await client.xrpc<XrpcErrorBody>(accessToken, "app.bsky.actor.putPreferences", {
      json: { preferences: [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: true }, { $type: "com.example.pref", x: 1 }] },
    });
    expect(put.status).toBe(400);
    expect(put.body.error).toBe("InvalidRequest");
    expect(put.body.message).toMatch(/app\.bsky/);
    const after = await client.xrpc(accessToken, "app.bsky.actor.getPreferences");
    expect(after.body).toEqual(before.body);
  });

  it("a body that is not JSON is a 400", async () => {
    const { client, accessToken } = sessions.prefs!;
    const result = await client.requestWithToken<XrpcErrorBody>("POST", `${server.issuer}/xrpc/app.bsky.actor.putPreferences`, accessToken, {
      body: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("InvalidRequest");
  });
});
