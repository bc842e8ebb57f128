import { hmacBase64url } from "../../util/crypto.ts";
import { MINUTE } from "../../util/time.ts";

/**
 * Stateless DPoP server nonces (RFC 9449 §8): HMAC of a time window under a
 * secret kept in the database, so every server process derives the same
 * nonce. The previous and next windows are accepted too, which covers clock
 * skew between processes and a client that fetched a nonce just before the
 * window turned.
 */
export class DpopNonces {
  private cache = new Map<number, string>();

  constructor(
    private readonly secret: string,
    private readonly windowMs = 3 * MINUTE,
    private readonly now: () => number = Date.now,
  ) {}

  current(): string {
    return this.forWindow(this.windowIndex());
  }

  /** Plain comparison: nonces are not secrets (every response carries the current one), so timing reveals nothing. */
  isValid(nonce: string): boolean {
    const index = this.windowIndex();
    return nonce === this.forWindow(index) || nonce === this.forWindow(index - 1) || nonce === this.forWindow(index + 1);
  }

  private windowIndex(): number {
    return Math.floor(this.now() / this.windowMs);
  }

  private forWindow(index: number): string {
    let nonce = this.cache.get(index);
    if (!nonce) {
      nonce = hmacBase64url(this.secret, `dpop-nonce:${index}`);
      if (this.cache.size > 8) this.cache.clear();
      this.cache.set(index, nonce);
    }
    return nonce;
  }
}
