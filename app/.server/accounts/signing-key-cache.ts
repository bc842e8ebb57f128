import type { AccountKeypair } from "./signing-key.ts";
import { MINUTE } from "../util/time.ts";

/**
 * The accounts' signing keys, opened (docs/decisions/0050), kept in memory a minute per account (at most 1,000
 * accounts), for service proxying, which signs a token with the caller's key for every call (docs/decisions/0048): one
 * statement less per call. A key is never changed in place here (an account keeps its key until it is deleted, and a
 * deleted account's tokens no longer authenticate; sealing it again under a new encryption key changes its row, not
 * the key), so a minute-old copy is the key.
 */
export class SigningKeyCache {
  private readonly entries = new Map<string, { key: AccountKeypair; at: number }>();

  constructor(
    private readonly load: (did: string) => Promise<AccountKeypair | undefined>,
    private readonly now: () => number,
    private readonly ttlMs = MINUTE,
    private readonly maxEntries = 1000,
  ) {}

  async of(did: string): Promise<AccountKeypair | undefined> {
    const now = this.now();
    const hit = this.entries.get(did);
    if (hit && now - hit.at < this.ttlMs) return hit.key;
    const key = await this.load(did);
    if (key === undefined) return undefined;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(did, { key, at: now });
    return key;
  }
}
