/**
 * Open firehose connections per client address, in this process
 * (docs/decisions/0029): a relay needs one connection, so a small cap keeps
 * one address from holding a server's sockets and send queues. The entry
 * counts an address by its limit bucket (limitBucketOf: an IPv6 address by
 * its /64, docs/decisions/0044), as every per-address limit does. Counted in
 * memory because a connection lives in one process; with several processes
 * (ATRIUM_WORKERS) an address may hold the cap in each.
 */
export class ConnectionCaps {
  private readonly open = new Map<string, number>();

  constructor(private readonly perAddress: number) {}

  /** Takes a place for `address` (a limit bucket): its release (call once, when the connection ends), or undefined when it is at its cap. */
  acquire(address: string): (() => void) | undefined {
    const count = this.open.get(address) ?? 0;
    if (count >= this.perAddress) return undefined;
    this.open.set(address, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(address) ?? 1) - 1;
      if (left <= 0) this.open.delete(address);
      else this.open.set(address, left);
    };
  }
}
