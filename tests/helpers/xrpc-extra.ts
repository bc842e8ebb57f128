/**
 * Small helpers for the XRPC integration tests (blobs, preferences, service
 * auth, proxying, permission sets): loopback clients that declare a given
 * scope, raw uploads, the account's public signing key from its DID document,
 * sample file bytes and a throwaway local HTTP server.
 */
import { parseDidKey } from "@atproto/crypto";
import { ECDH } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { importJWK } from "jose";
import { CID } from "multiformats/cid";
import * as raw from "multiformats/codecs/raw";
import { sha256 } from "multiformats/hashes/sha2";
import { createPkce, DpopClient, generateDpopKey, type HttpResult, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { obtainTokens, REDIRECT } from "./flow.ts";
import type { TestServer } from "./test-server.ts";

/** A loopback client_id whose metadata declares exactly `scope`. */
export function loopbackClientId(scope: string): string {
  return `http://localhost?${new URLSearchParams({ redirect_uri: REDIRECT, scope })}`;
}

export type ScopedSession = { client: DpopClient; tokens: TokenSet; accessToken: string };

/**
 * A loopback client declaring `scope`, authorized by Alice for the same
 * scope (PAR → consent → code → tokens). Alice must exist on `server`.
 */
export async function scopedSession(server: TestServer, scope: string): Promise<ScopedSession> {
  const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(scope));
  const { tokens } = await obtainTokens(server, client, { scope });
  return { client, tokens, accessToken: tokens.access_token };
}

export type XrpcErrorBody = { error?: string; message?: string };

/** com.atproto.repo.uploadBlob with a raw body; `contentType` null sends no Content-Type at all. */
export function uploadBlob<T = unknown>(session: ScopedSession, bytes: Uint8Array, contentType: string | null): Promise<HttpResult<T>> {
  const headers: Record<string, string> = {};
  if (contentType !== null) headers["Content-Type"] = contentType;
  return session.client.requestWithToken<T>("POST", `${session.client.issuer}/xrpc/com.atproto.repo.uploadBlob`, session.accessToken, {
    body: new Blob([Uint8Array.from(bytes)]),
    headers,
  });
}

/** The CIDv1 (raw codec, sha2-256) of `bytes`, as atproto blob refs carry it. */
export async function blobCid(bytes: Uint8Array): Promise<string> {
  return CID.createV1(raw.code, await sha256.digest(bytes)).toString();
}

/**
 * The did:key of the account's signing key as the network sees it: the `#atproto` verification method of its DID at
 * the test run's PLC directory (the stored key is sealed: docs/decisions/0050).
 */
export async function accountDidKey(did: string): Promise<string> {
  const response = await fetch(`${process.env.ATRIUM_PLC_DIRECTORY_URL}/${did}/data`);
  if (!response.ok) throw new Error(`the PLC directory has no ${did} (${response.status})`);
  const { verificationMethods } = (await response.json()) as { verificationMethods: Record<string, string> };
  if (!verificationMethods.atproto) throw new Error(`${did} names no #atproto key`);
  return verificationMethods.atproto;
}

/** The public half of the account's signing key, from its did:key, as a jose key. */
export async function accountPublicKey(did: string): Promise<CryptoKey | Uint8Array> {
  const { keyBytes } = parseDidKey(await accountDidKey(did));
  const point = ECDH.convertKey(Buffer.from(keyBytes), "prime256v1", undefined, undefined, "uncompressed") as Buffer;
  return importJWK({ kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") }, "ES256");
}

/** Minimal files of each detected type (only the leading signature matters to detection). */
export const SAMPLES = {
  png: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]),
  jpeg: Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0xff, 0xd9]),
  gif: Uint8Array.from([...Buffer.from("GIF89a"), 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x3b]),
  webp: Uint8Array.from([...Buffer.from("RIFF"), 0x1a, 0x00, 0x00, 0x00, ...Buffer.from("WEBPVP8L"), 0x0d, 0x00, 0x00, 0x00, 0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0x00]),
  mp4: Uint8Array.from([0x00, 0x00, 0x00, 0x18, ...Buffer.from("ftypmp42"), 0x00, 0x00, 0x00, 0x00, ...Buffer.from("mp42isom"), 0x00, 0x00, 0x00, 0x08, ...Buffer.from("free")]),
  json: new TextEncoder().encode('{"hello": ["world", 1, true]}\n'),
  text: new TextEncoder().encode("Just some plain words.\nA second line.\n"),
  binary: Uint8Array.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xfd, 0x00, 0x80, 0x81, 0x82]),
};

export type LocalHttpServer = { url: string; port: number; close(): Promise<void> };

/** A node:http server on 127.0.0.1 with a random port. */
export async function startLocalHttpServer(handler: http.RequestListener): Promise<LocalHttpServer> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads a node:http request body to the end. */
export async function readBody(request: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The expected text of a refusal naming `scope`. */
export function missingPermission(scope: string): string {
  return `Missing permission: ${scope}`;
}

/** A PAR for `scope` with `client` (PKCE, loopback redirect); the raw result. */
export async function pushScope(client: DpopClient, scope: string): Promise<HttpResult<{ request_uri?: string; error?: string; error_description?: string }>> {
  const pkce = createPkce();
  return client.pushAuthorizationRequest({
    redirect_uri: "http://127.0.0.1:54321/callback",
    scope,
    state: `state-${Math.random().toString(36).slice(2)}`,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
}

/** A DpopClient for the loopback client declaring `scope` (no authorization yet). */
export async function loopbackClient(server: TestServer, scope: string): Promise<DpopClient> {
  return new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(scope));
}
