import { describe, expect, it } from "vitest";
import type { CachedClient, ClientStore } from "../../oauth/client/client-store.ts";
import type { ClientCacheBounds } from "../sql-client-store.ts";

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

/** A cached client; every entry of the same `nameLength` has the same size in bytes. */
export function cachedClient(n: number, nameLength = 20): CachedClient {
  const clientId = `https://app-${String(n).padStart(3, "0")}.example/client-metadata.json`;
  return {
    client: {
      clientId,
      isLoopback: false,
      applicationType: "web",
      authMethod: "private_key_jwt",
      redirectUris: [`https://app-${String(n).padStart(3, "0")}.example/callback`],
      scopes: ["atproto", "transition:generic"],
      clientName: `Ä${"x".repeat(nameLength - 1)}`,
      jwksUri: `https://app-${String(n).padStart(3, "0")}.example/jwks.json`,
    },
    fetchedKeys: [{ kty: "EC", crv: "P-256", x: "x-coordinate", y: "y-coordinate", kid: "key-1", alg: "ES256", use: "sig" }],
  };
}
export const clientIdOf = (n: number) => cachedClient(n).client.clientId;
/** What an entry counts for against the cache's byte bound. */
export const cachedSizeOf = (cached: CachedClient) => Buffer.byteLength(JSON.stringify(cached));

/** A client cache under test, empty, with the bounds asked for (generous where not); `cachedIds` lists what it holds. */
export type ClientStoreSubject = {
  store: ClientStore;
  cachedIds(): Promise<string[]>;
};

/**
 * The client metadata cache's contract (docs/decisions/0011): freshness, upsert, and its two bounds. Run on each SQL
 * engine and on the memory store the managers' unit tests use. The SQL store's batch cleanup and races between
 * connections stay in sql-client-store.test.ts: one memory store has no second connection to race with.
 */
export function clientStoreContract(name: string, open: (bounds: Partial<ClientCacheBounds>) => Promise<ClientStoreSubject>): void {
  describe(name, () => {
    let subject: ClientStoreSubject;
    const cachedIds = async () => (await subject.cachedIds()).sort();
    const opened = async (bounds: Partial<ClientCacheBounds> = {}) => {
      subject = await open(bounds);
      return subject.store;
    };

    it("finds a saved client while fresh, exactly as saved (non-ASCII included)", async () => {
      const store = await opened();
      await store.save(clientIdOf(1), cachedClient(1), NOW, NOW + HOUR);
      expect(await store.findFresh(clientIdOf(1), NOW + HOUR - 1)).toEqual(cachedClient(1));
      expect(await store.findFresh(clientIdOf(2), NOW)).toBeUndefined();
    });

    it("an expired entry is absent and its row deleted (lazy expiry)", async () => {
      const store = await opened();
      await store.save(clientIdOf(1), cachedClient(1), NOW, NOW + HOUR);
      expect(await store.findFresh(clientIdOf(1), NOW + HOUR)).toBeUndefined();
      expect(await cachedIds()).toEqual([]);
    });

    it("saving again replaces the entry and its expiry (one row)", async () => {
      const store = await opened();
      await store.save(clientIdOf(1), cachedClient(1), NOW, NOW + HOUR);
      const changed = { ...cachedClient(1), fetchedKeys: [] };
      await store.save(clientIdOf(1), changed, NOW + 10, NOW + 2 * HOUR);
      expect(await store.findFresh(clientIdOf(1), NOW + HOUR)).toEqual(changed);
      expect(await cachedIds()).toEqual([clientIdOf(1)]);
    });

    it("keeps at most maxEntries, evicting the oldest fetched first", async () => {
      const store = await opened({ maxEntries: 3 });
      for (let n = 1; n <= 5; n++) await store.save(clientIdOf(n), cachedClient(n), NOW + n, NOW + HOUR);
      expect(await cachedIds()).toEqual([clientIdOf(3), clientIdOf(4), clientIdOf(5)]);
      // Fetching an old client again makes it the newest.
      await store.save(clientIdOf(3), cachedClient(3), NOW + 10, NOW + HOUR);
      await store.save(clientIdOf(6), cachedClient(6), NOW + 11, NOW + HOUR);
      expect(await cachedIds()).toEqual([clientIdOf(3), clientIdOf(5), clientIdOf(6)]);
    });

    it("keeps at most maxBytes of metadata, counted from the newest", async () => {
      const size = cachedSizeOf(cachedClient(1));
      const store = await opened({ maxBytes: Math.floor(2.5 * size) });
      for (let n = 1; n <= 4; n++) await store.save(clientIdOf(n), cachedClient(n), NOW + n, NOW + HOUR);
      expect(await cachedIds()).toEqual([clientIdOf(3), clientIdOf(4)]);
      // One large entry displaces as many small ones as it needs to.
      const large = cachedClient(5, size + 20);
      expect(cachedSizeOf(large)).toBeLessThanOrEqual(Math.floor(2.5 * size));
      await store.save(clientIdOf(5), large, NOW + 5, NOW + HOUR);
      expect(await cachedIds()).toEqual([clientIdOf(5)]);
    });

    it("does not cache an entry over 64 KiB at all", async () => {
      const store = await opened();
      await store.save(clientIdOf(1), cachedClient(1, 70_000), NOW, NOW + HOUR);
      expect(await store.findFresh(clientIdOf(1), NOW)).toBeUndefined();
      expect(await cachedIds()).toEqual([]);
    });
  });
}
