import http from "node:http";
import type { AddressInfo } from "node:net";
import { formatDidKey, multibaseToBytes, P256Keypair, verifySignature } from "@atproto/crypto";
import * as plc from "@did-plc/lib";

/**
 * A service on the network that Atrium proxies to (an app view, a feed generator, a labeler), standing in on
 * 127.0.0.1 for tests (docs/decisions/0048). Its DID is a did:web served by itself (/.well-known/did.json, requests
 * counted) or a did:plc registered at the test run's real PLC directory, and its DID document names it for the
 * services given. It verifies every service token as the reference's @atproto/xrpc-server verifyJwt does, with
 * @atproto/crypto, never Atrium's code: three parts; a `typ` that is not an access, refresh or DPoP token's; not
 * expired; `aud` its own DID; `lxm` the method called (or the one the route expects); the signature by the `#atproto`
 * key of the issuer's DID document as the PLC directory serves it (low-S only: verifySignature is strict by default).
 */

export type VerifiedToken = {
  header: { alg: string; typ?: string };
  payload: { iss: string; aud: string; exp: number; iat?: number; lxm?: string; jti?: string };
};

export type StandInCall = {
  method: string;
  nsid: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
  token?: VerifiedToken;
  /** Why the token was refused (the call is then answered 401), or "no token". */
  failure?: string;
};

/** Answers a call that passed (or did not need) the token check. */
export type StandInRoute = (call: StandInCall, response: http.ServerResponse) => void;

export type ServiceStandIn = {
  did: string;
  url: string;
  /** Every /xrpc call received, in order. */
  calls: StandInCall[];
  /** Requests for /.well-known/did.json (did:web only). */
  didDocumentRequests: number;
  /** Sets how `nsid` is answered; `lxm`: the method its token must name (a feed's getFeed carries getFeedSkeleton's). */
  route(nsid: string, answer: StandInRoute, options?: { lxm?: string; audience?: string; anonymous?: boolean }): void;
  close(): Promise<void>;
};

type RouteEntry = { answer: StandInRoute; lxm?: string; audience?: string; anonymous?: boolean };

export type StandInOptions = {
  /** The test run's PLC directory: where the issuers' keys are read, and a did:plc stand-in registered. */
  plcDirectoryUrl: string;
  identity: "did:web" | "did:plc";
  /** The services its DID document names: id → type (e.g. bsky_appview → BskyAppView). */
  services: Record<string, string>;
  /** Changes the served document (did:web: a test of a document without the service, say). */
  document?: (document: Record<string, unknown>) => Record<string, unknown>;
  /** The DID its tokens must name, when another than its own (a service the operator pinned to it by URL). */
  audience?: string;
};

/** By default every call is echoed: 200 JSON with the method and query, and an `atproto-repo-rev`. */
const echo: StandInRoute = (call, response) => {
  response.writeHead(200, { "content-type": "application/json; charset=utf-8", "atproto-repo-rev": "3l5q5s2qzbk2a", "x-secret-upstream": "1" });
  response.end(JSON.stringify({ ok: true, method: call.nsid, query: call.query, ...(call.body ? { body: JSON.parse(call.body) as unknown } : {}) }));
};

export async function startServiceStandIn(options: StandInOptions): Promise<ServiceStandIn> {
  const routes = new Map<string, RouteEntry>();
  const calls: StandInCall[] = [];
  let document: Record<string, unknown> = {};
  const standIn = { calls, didDocumentRequests: 0 } as ServiceStandIn;

  const server = http.createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: "StandInFailed", message: String(error) }));
    });
  });
  async function handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", "http://stand-in.invalid");
    if (url.pathname === "/.well-known/did.json" && options.identity === "did:web") {
      standIn.didDocumentRequests += 1;
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(document));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const call: StandInCall = {
      method: request.method ?? "",
      nsid: url.pathname.replace(/^\/xrpc\//, ""),
      query: Object.fromEntries(url.searchParams),
      headers: request.headers,
      body: Buffer.concat(chunks).toString("utf8"),
    };
    calls.push(call);
    const route = routes.get(call.nsid) ?? { answer: echo };
    if (!route.anonymous) {
      try {
        call.token = await verifyServiceToken(request.headers.authorization, { audience: route.audience ?? options.audience ?? standIn.did, lxm: route.lxm ?? call.nsid, plcDirectoryUrl: options.plcDirectoryUrl });
      } catch (error) {
        call.failure = (error as Error).message;
        response.writeHead(401, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: "AuthenticationRequired", message: call.failure }));
        return;
      }
    }
    route.answer(call, response);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  standIn.url = `http://127.0.0.1:${port}`;
  const services = Object.entries(options.services);
  if (options.identity === "did:web") {
    standIn.did = `did:web:127.0.0.1%3A${port}`;
    document = (options.document ?? ((d) => d))({
      "@context": ["https://www.w3.org/ns/did/v1"],
      id: standIn.did,
      service: services.map(([id, type]) => ({ id: `#${id}`, type, serviceEndpoint: standIn.url })),
    });
  } else {
    standIn.did = await registerPlcService(options.plcDirectoryUrl, Object.fromEntries(services.map(([id, type]) => [id, { type, endpoint: standIn.url }])));
  }
  standIn.route = (nsid, answer, routeOptions = {}) => routes.set(nsid, { answer, ...routeOptions });
  standIn.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return standIn;
}

/** Registers a did:plc naming `services` at the directory (@did-plc/lib, the reference's client); its DID. */
export async function registerPlcService(directoryUrl: string, services: Record<string, { type: string; endpoint: string }>): Promise<string> {
  const rotation = await P256Keypair.create({ exportable: false });
  const signing = await P256Keypair.create({ exportable: false });
  const op = await plc.signOperation(
    { type: "plc_operation", verificationMethods: { atproto: signing.did() }, rotationKeys: [rotation.did()], alsoKnownAs: [], services, prev: null },
    rotation,
  );
  const did = await plc.didForCreateOp(op);
  await new plc.Client(directoryUrl).sendOperation(did, op);
  return did;
}

/** The checks of @atproto/xrpc-server's verifyJwt, with @atproto/crypto and the issuer's document at the PLC directory. */
export async function verifyServiceToken(authorization: string | undefined, expected: { audience: string; lxm: string; plcDirectoryUrl: string }): Promise<VerifiedToken> {
  const jwt = /^Bearer (.+)$/.exec(authorization ?? "")?.[1];
  if (!jwt) throw new Error("no token");
  const parts = jwt.split(".");
  if (parts.length !== 3) throw new Error("poorly formatted jwt");
  const header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString("utf8")) as VerifiedToken["header"];
  if (typeof header.alg !== "string") throw new Error("poorly formatted jwt");
  if (["at+jwt", "refresh+jwt", "dpop+jwt"].includes(header.typ ?? "")) throw new Error(`Invalid jwt type "${header.typ}"`);
  const payload = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as VerifiedToken["payload"];
  if (Date.now() / 1000 > payload.exp) throw new Error("jwt expired");
  if (payload.aud !== expected.audience) throw new Error(`jwt audience ${payload.aud} does not match service did ${expected.audience}`);
  if (payload.lxm !== expected.lxm) throw new Error(`bad jwt lexicon method ("lxm") ${String(payload.lxm)}. must match: ${expected.lxm}`);
  if (typeof payload.iss !== "string" || !payload.iss.startsWith("did:")) throw new Error("jwt iss is not a valid did");
  const key = await atprotoKeyAt(expected.plcDirectoryUrl, payload.iss);
  const valid = await verifySignature(key, new TextEncoder().encode(`${parts[0]}.${parts[1]}`), Buffer.from(parts[2]!, "base64url"), { jwtAlg: header.alg });
  if (!valid) throw new Error("jwt signature does not match jwt issuer");
  return { header, payload };
}

/** The did:key of the #atproto key in `did`'s document at the PLC directory. */
async function atprotoKeyAt(directoryUrl: string, did: string): Promise<string> {
  const response = await fetch(`${directoryUrl}/${did}`);
  if (response.status !== 200) throw new Error(`the issuer ${did} does not resolve (${response.status})`);
  const document = (await response.json()) as { id: string; verificationMethod?: Array<{ id: string; type: string; publicKeyMultibase: string }> };
  const method = document.verificationMethod?.find((entry) => entry.id === "#atproto" || entry.id === `${did}#atproto`);
  if (!method) throw new Error(`the issuer's document names no #atproto key`);
  if (method.type === "Multikey") return `did:key:${method.publicKeyMultibase}`;
  if (method.type === "EcdsaSecp256r1VerificationKey2019") return formatDidKey("ES256", multibaseToBytes(method.publicKeyMultibase));
  return formatDidKey("ES256K", multibaseToBytes(method.publicKeyMultibase));
}
