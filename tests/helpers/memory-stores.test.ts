import { clientStoreContract } from "../../app/.server/stores/contracts/client-store-contract.ts";
import { consentStoreContract } from "../../app/.server/stores/contracts/consent-store-contract.ts";
import { grantStoreContract } from "../../app/.server/stores/contracts/grant-store-contract.ts";
import { replayStoreContract } from "../../app/.server/stores/contracts/replay-store-contract.ts";
import { requestStoreContract, WAY_BACK_RETENTION } from "../../app/.server/stores/contracts/request-store-contract.ts";
import { MemoryClientStore, MemoryConsentStore, MemoryGrantStore, MemoryReplayStore, MemoryRequestStore } from "./memory-stores.ts";
import { accountFor } from "./store-fixtures.ts";

/**
 * The in-memory stores the managers' unit tests run on keep the same contracts as the SQL stores
 * (app/.server/stores/contracts/): were they to differ, those unit tests would prove the managers against a store the
 * server never uses. The contracts' races between connections are left to the SQL suites: one memory store in one
 * process has no second connection, and each of its methods runs to its end before another starts.
 */

/** A memory grant store that names accounts as the contract's SQL accounts are named (insertAccount's handles). */
function memoryGrantStore(): MemoryGrantStore {
  const store = new MemoryGrantStore();
  store.handleOf = (did) => accountFor(did).handle;
  return store;
}

grantStoreContract("MemoryGrantStore keeps the GrantStore contract", async () => {
  const store = memoryGrantStore();
  const records = { AuthorizationCode: store.codes, Grant: store.grants, AccessToken: store.access, RefreshToken: store.refresh };
  const ofGrant = (rows: Map<string, { grantId: string }>, grantId: string) => [...rows.values()].filter((row) => row.grantId === grantId).length;
  return {
    store,
    kept: async (kind) => records[kind].size,
    tokensOf: async (grantId) => ({ access: ofGrant(store.access, grantId), refresh: ofGrant(store.refresh, grantId) }),
  };
});

replayStoreContract("MemoryReplayStore keeps the ReplayStore contract", async (now) => {
  const store = new MemoryReplayStore(now);
  return { store, kept: async () => store.rows.size, close: async () => {} };
});

clientStoreContract("MemoryClientStore keeps the ClientStore contract", async (bounds) => {
  const store = new MemoryClientStore(bounds);
  return { store, cachedIds: async () => [...store.rows.keys()] };
});

consentStoreContract("MemoryConsentStore keeps the ConsentStore contract", async () => {
  const grants = memoryGrantStore();
  const ofApp = (rows: Map<string, { accountDid: string; clientId: string }>, did: string, clientId: string) =>
    [...rows.values()].filter((row) => row.accountDid === did && row.clientId === clientId).length;
  return {
    store: new MemoryConsentStore(grants),
    grants,
    kept: async (did, clientId) => ({ grants: ofApp(grants.grants, did, clientId), codes: ofApp(grants.codes, did, clientId) }),
    tokensOf: async (grantId) => [...grants.access.values(), ...grants.refresh.values()].filter((row) => row.grantId === grantId).length,
  };
});

requestStoreContract("MemoryRequestStore keeps the RequestStore contract", async () => {
  const codes = memoryGrantStore();
  const store = new MemoryRequestStore(codes, WAY_BACK_RETENTION);
  return { store, codes, keptRequests: async () => store.rows.size, keptCodes: async () => codes.codes.size };
});
