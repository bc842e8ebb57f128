import { hmacBase64url, safeEqual } from "../../util/crypto.ts";
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

  isValid(nonce: string): boolean {
    const index = this.windowIndex();
    return [index, index - 1, index + 1].some((candidate) => safeEqual(this.forWindow(candidate), nonce));
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
