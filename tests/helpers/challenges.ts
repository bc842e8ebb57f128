/**
 * Mints WebAuthn challenges the way a server process would, with the key
 * derived from the test server's stored cookie secret and any clock: for
 * challenges a test cannot get over HTTP (already expired, or issued for
 * another purpose than the endpoint gives out).
 */
import type { ChallengeBinding, ChallengePurpose } from "../../app/.server/accounts/challenge-store.ts";
import { challengeMacKey, SignedChallengeStore } from "../../app/.server/stores/signed-challenge-store.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { rowOf } from "./databases.ts";
import type { TestServer } from "./test-server.ts";

export async function mintChallenge(server: TestServer, purpose: ChallengePurpose, binding: ChallengeBinding, options: { issuedAt?: number; lifetimeMs?: number } = {}): Promise<string> {
  const { value } = (await rowOf<{ value: string }>(server.database(), sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'cookie'`))!;
  // Issuing never records anything, so no replay store is needed.
  const noReplayStore = { recordUnique: async () => false };
  const issuedAt = options.issuedAt ?? Date.now();
  return new SignedChallengeStore(challengeMacKey(value), noReplayStore, () => issuedAt).issue(purpose, binding, options.lifetimeMs ?? 5 * 60_000);
}
