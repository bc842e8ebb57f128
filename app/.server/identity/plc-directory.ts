import { z } from "zod";
import { SECOND } from "../util/time.ts";
import { didDocumentSchema, type DidDocument } from "./did-document.ts";
import { IdentityError } from "./identity-error.ts";
import type { PlcOperation, PlcTombstone } from "./plc-operation.ts";

const TIMEOUT_MS = 10 * SECOND;
const MAX_ANSWER_BYTES = 256 * 1024;

const plcOperationSchema = z.object({
  type: z.literal("plc_operation"),
  rotationKeys: z.array(z.string()).max(10),
  verificationMethods: z.record(z.string()).refine((methods) => Object.keys(methods).length <= 10),
  alsoKnownAs: z.array(z.string()).max(10),
  services: z.record(z.object({ type: z.string(), endpoint: z.string() })).refine((services) => Object.keys(services).length <= 10),
  prev: z.string().nullable(),
  sig: z.string(),
});

const plcTombstoneSchema = z.object({ type: z.literal("plc_tombstone"), prev: z.string(), sig: z.string() });

const lastOperationSchema = z.discriminatedUnion("type", [plcOperationSchema, plcTombstoneSchema]);

/**
 * A PLC directory's HTTP API (https://web.plc.directory/api/redoc): `POST /<did>` submits a signed operation,
 * `GET /<did>` answers the DID document, `GET /<did>/log/last` the latest operation. Every answer is checked with
 * zod; the URL is ATRIUM_PLC_DIRECTORY_URL (https, or http on loopback: config.ts).
 */
export class PlcDirectory {
  readonly url: string;

  constructor(url: string) {
    this.url = url.replace(/\/+$/, "");
  }

  async submit(did: string, operation: PlcOperation | PlcTombstone): Promise<void> {
    const response = await this.request(did, `/${did}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(operation) });
    if (!response.ok) {
      const text = await readText(response).catch(() => "");
      // A 4xx is the directory judging the operation (its signature, its prev, its keys): the operation's fault, 400.
      // Anything else is the directory failing: 502.
      const code = response.status >= 400 && response.status < 500 ? "plc_operation_refused" : "plc_refused";
      throw new IdentityError(code, `The PLC directory at ${this.url} refused the operation for ${did} (${response.status}): ${errorMessageOf(text)}`);
    }
    await response.body?.cancel();
  }

  /** The DID document; undefined when the directory has never seen the DID. */
  async document(did: string): Promise<DidDocument | undefined> {
    const json = await this.getJson(did, `/${did}`);
    if (json === undefined) return undefined;
    const parsed = didDocumentSchema.safeParse(json);
    if (!parsed.success || parsed.data.id !== did) throw new IdentityError("plc_malformed", `The PLC directory at ${this.url} answered a malformed document for ${did}`);
    return parsed.data;
  }

  /** The latest operation of the DID's log (a tombstone when the DID ended); undefined when the directory has never seen the DID. */
  async lastOperation(did: string): Promise<PlcOperation | PlcTombstone | undefined> {
    const json = await this.getJson(did, `/${did}/log/last`);
    if (json === undefined) return undefined;
    const parsed = lastOperationSchema.safeParse(json);
    if (!parsed.success) throw new IdentityError("plc_malformed", `The PLC directory at ${this.url} answered a malformed last operation for ${did}`);
    return parsed.data;
  }

  private async getJson(did: string, path: string): Promise<unknown> {
    const response = await this.request(did, path, { headers: { accept: "application/json, application/did+ld+json" } });
    if (response.status === 404 || response.status === 410) {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new IdentityError("plc_unreachable", `The PLC directory at ${this.url} answered ${response.status} for ${did}`);
    }
    try {
      return JSON.parse(await readText(response)) as unknown;
    } catch (error) {
      throw new IdentityError("plc_malformed", `The PLC directory at ${this.url} answered something that is not JSON for ${did}`, { cause: error });
    }
  }

  private async request(did: string, path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(`${this.url}${path}`, { ...init, redirect: "error", signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (error) {
      throw new IdentityError("plc_unreachable", `The PLC directory at ${this.url} could not be reached for ${did}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
}

async function readText(response: Response): Promise<string> {
  const text = await response.text();
  if (text.length > MAX_ANSWER_BYTES) throw new IdentityError("plc_malformed", "The PLC directory's answer is too large");
  return text;
}

function errorMessageOf(text: string): string {
  try {
    const parsed = z.object({ message: z.string() }).safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data.message.slice(0, 300);
  } catch {
    // not JSON: the text itself says it
  }
  return text.slice(0, 300) || "no reason given";
}
