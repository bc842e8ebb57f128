import { parseCid } from "@atproto/lex-data";
import { concatBytesAsync, getRecords, writeCarStream, type CarBlock } from "@atproto/repo";
import { AtriumError } from "../errors/atrium-error.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { BlockRow, RepoSnapshot, RepoStore } from "../repo/repo-store.ts";
import { ExportEnded, type ExportTicket, type ExportWatch } from "./export-watch.ts";
import { headOf, refuseUnavailable, SyncError, type SyncReader } from "./repo-sync.ts";

/**
 * What com.atproto.sync.* serves of a repository as CAR files (docs/decisions/0027, 0042): the whole repository
 * (getRepo), blocks by CID (getBlocks) and a record's proof (getRecord), each verifiable by @atproto/repo on its own.
 * An export reads one database snapshot held open while its client takes the CAR at its own pace, in pages of at
 * most PAGE_BYTES read only when the client has taken the page before: what the server holds for an export is a page
 * and its stream's buffers, whatever the repository's size, and nothing is read for a client that stops reading.
 * Exports are capped per client address and in all, and ended when idle or too long (export-watch.ts).
 */

/** Block bytes read at once for an export (one page), unless a single block is larger (it is then read alone). */
export const PAGE_BYTES = 256 * 1024;

/** The CAR's small pieces (a varint, a CID, a small block) are handed to the response in chunks of about this much. */
const CHUNK_BYTES = 64 * 1024;

/** How often a record's proof is built again on a new head (a concurrent commit removed a block of the old one) before it is built from a snapshot. */
const PROOF_ATTEMPTS = 3;

/** Retry-After of an export refused at a cap: exports end within seconds, or are ended for idling. */
const RETRY_AFTER_SECONDS = 10;

export type RepoExportOptions = {
  /** The database's own bound on a snapshot (Database.holdSnapshot): the exports' longest time. */
  maxHoldMs: number;
  /** PAGE_BYTES and CHUNK_BYTES unless a test says otherwise. */
  pageBytes?: number;
  chunkBytes?: number;
};

export class RepoExports {
  private readonly pageBytes: number;
  private readonly chunkBytes: number;

  constructor(
    private readonly store: RepoStore,
    private readonly watch: ExportWatch,
    private readonly metrics: Pick<Metrics, "rateLimited">,
    private readonly options: RepoExportOptions,
  ) {
    this.pageBytes = options.pageBytes ?? PAGE_BYTES;
    this.chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
  }

  /**
   * com.atproto.sync.getRepo: "Download a repository export as CAR file", rooted at the head; with `since`, only the
   * blocks added after that revision. One snapshot from the head to the last block, so the CAR is one commit's
   * repository even while others commit and remove the blocks their new heads no longer reach. Its owner and the
   * operator are served it whatever the account's state (`reader`: docs/decisions/0051).
   */
  async repository(did: string, since: string | undefined, bucket: string, reader: SyncReader = "public"): Promise<ReadableStream<Uint8Array>> {
    const ticket = this.admit(bucket);
    const snapshot = await this.opened(ticket, did, reader);
    const pages = this.pages(ticket, snapshot, since);
    return exportStream(ticket, coalesced(writeCarStream(parseCid(snapshot.head.cid), pages), this.chunkBytes));
  }

  /**
   * com.atproto.sync.getBlocks: the blocks named (up to 1,000), from this repository only, as a CAR without a root;
   * BlockNotFound names any missing, found before anything is sent (their sizes are read, not their content), and the
   * blocks are then read on the same snapshot in pages, so none can vanish meanwhile.
   */
  async blocks(did: string, cids: readonly string[], bucket: string): Promise<ReadableStream<Uint8Array>> {
    const ticket = this.admit(bucket);
    const snapshot = await this.opened(ticket, did);
    try {
      const wanted = [...new Set(cids)];
      const sizes = new Map((await snapshot.blockSizes(wanted)).map((block) => [block.cid, block.size]));
      const missing = wanted.filter((cid) => !sizes.has(cid));
      if (missing.length > 0) throw new SyncError("BlockNotFound", `Could not find blocks: ${missing.join(", ")}`);
      const pages = this.named(ticket, snapshot, pagesOf(wanted, sizes, this.pageBytes));
      return exportStream(ticket, coalesced(writeCarStream(null, pages), this.chunkBytes));
    } catch (error) {
      ticket.end();
      throw error;
    }
  }

  /**
   * com.atproto.sync.getRecord: the commit, the MST nodes from the root to the record's key, and the record: proof of
   * its presence, or of its absence (200 either way, as the reference PDS answers). Read block by block from the head;
   * a commit landing in between may remove a block of that head, and the proof is then built again on the new head.
   * When commits keep landing (PROOF_ATTEMPTS times), it is read from a snapshot, which no commit can move, block by
   * block as the walk asks: it always answers, and reads only the proof's blocks (docs/decisions/0027, amendment;
   * 0042). That read counts as an export.
   */
  async recordProof(did: string, collection: string, rkey: string, bucket: string): Promise<Uint8Array> {
    const wanted = [{ collection, rkey }];
    for (let attempt = 1; attempt <= PROOF_ATTEMPTS; attempt++) {
      const head = await headOf(this.store, did);
      try {
        return await concatBytesAsync(getRecords(this.store.blockstore(did), parseCid(head.cid), wanted));
      } catch (error) {
        if ((await this.store.head(did))?.cid === head.cid) throw error;
      }
    }
    const ticket = this.admit(bucket);
    try {
      const snapshot = await this.opened(ticket, did);
      return await concatBytesAsync(getRecords(snapshot.blockstore(), parseCid(snapshot.head.cid), wanted));
    } finally {
      ticket.end();
    }
  }

  /** A place under the caps, or the reference's 429 (RateLimitExceeded, with Retry-After) before anything is read. */
  private admit(bucket: string): ExportTicket {
    const ticket = this.watch.admit(bucket);
    if (ticket) return ticket;
    this.metrics.rateLimited("repo_export");
    throw new AtriumError("RateLimitExceeded", `Too many repository exports at once, from this address or in all; try again in ${RETRY_AFTER_SECONDS} seconds`, {
      status: 429,
      xrpcName: "RateLimitExceeded",
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    });
  }

  /**
   * The repository's snapshot, released when the export ends (whatever ends it); RepoNotFound, RepoTakendown or
   * RepoDeactivated, as every method that serves the repository's data answers (but to `reader` "owner-or-admin"),
   * with the export ended.
   */
  private async opened(ticket: ExportTicket, did: string, reader: SyncReader = "public"): Promise<RepoSnapshot> {
    let snapshot: RepoSnapshot | undefined;
    try {
      snapshot = await this.store.openSnapshot(did, { maxHoldMs: this.options.maxHoldMs });
      refuseUnavailable(did, snapshot?.head, snapshot?.state ?? "active", reader);
    } catch (error) {
      await snapshot?.release();
      ticket.end();
      throw error;
    }
    const held = snapshot;
    if (ticket.signal.aborted) void held.release();
    else ticket.signal.addEventListener("abort", () => void held.release(), { once: true });
    return held;
  }

  /** Every block of the snapshot (added after `since`, if given), a page at a time, each page read when the one before is handed on. */
  private async *pages(ticket: ExportTicket, snapshot: RepoSnapshot, since: string | undefined): AsyncGenerator<CarBlock> {
    let after = "";
    for (;;) {
      const page = await snapshot.blockPage(after, { since, maxBytes: this.pageBytes });
      if (page.length === 0) return;
      after = page.at(-1)!.cid;
      yield* handedOn(ticket, page);
    }
  }

  /** The named blocks, a page of CIDs at a time. */
  private async *named(ticket: ExportTicket, snapshot: RepoSnapshot, pages: string[][]): AsyncGenerator<CarBlock> {
    for (const cids of pages) yield* handedOn(ticket, await snapshot.blocks(cids));
  }
}

/** A page's blocks, each let go once handed to the CAR, so that a page is all an export holds of the repository. */
function* handedOn(ticket: ExportTicket, page: BlockRow[]): Generator<CarBlock> {
  ticket.read(page.reduce((sum, block) => sum + block.bytes.byteLength, 0));
  for (let i = 0; i < page.length; i++) {
    const block = page[i]!;
    page[i] = LET_GO;
    ticket.handedOn(block.bytes.byteLength);
    yield { cid: parseCid(block.cid), bytes: block.bytes };
  }
}

const LET_GO: BlockRow = { cid: "", bytes: new Uint8Array(0) };

/** CIDs in pages whose blocks' sizes add up to at most `maxBytes` (a larger block alone). */
export function pagesOf(cids: readonly string[], sizes: ReadonlyMap<string, number>, maxBytes: number): string[][] {
  const pages: string[][] = [];
  let page: string[] = [];
  let bytes = 0;
  for (const cid of cids) {
    const size = sizes.get(cid) ?? 0;
    if (page.length > 0 && bytes + size > maxBytes) {
      pages.push(page);
      page = [];
      bytes = 0;
    }
    page.push(cid);
    bytes += size;
  }
  if (page.length > 0) pages.push(page);
  return pages;
}

/** Small pieces gathered into chunks of about CHUNK_BYTES (fewer, larger writes); a larger piece passes as it is. */
export async function* coalesced(pieces: AsyncIterable<Uint8Array>, chunkBytes: number): AsyncGenerator<Uint8Array> {
  let gathered: Uint8Array[] = [];
  let length = 0;
  const flush = () => {
    const chunk = gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, length);
    gathered = [];
    length = 0;
    return chunk;
  };
  for await (const piece of pieces) {
    if (piece.byteLength >= chunkBytes) {
      if (length > 0) yield flush();
      yield piece;
      continue;
    }
    gathered.push(piece);
    length += piece.byteLength;
    if (length >= chunkBytes) yield flush();
  }
  if (length > 0) yield flush();
}

/**
 * The export's answer body: reads the next chunk only when the response asks for one (a queue of none: nothing is read
 * ahead of the socket but Node's own stream buffers), which is also the export's sign of progress. It ends the export
 * when the CAR is complete, when it fails, and when the client goes (the response cancels it); an export ended early
 * (idle, deadline) errors it, which destroys the response.
 */
export function exportStream(ticket: ExportTicket, chunks: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        ticket.signal.addEventListener("abort", () => {
          if (ticket.signal.reason instanceof ExportEnded) controller.error(ticket.signal.reason);
        }, { once: true });
      },
      async pull(controller) {
        ticket.progress();
        let next: IteratorResult<Uint8Array>;
        try {
          next = await iterator.next();
        } catch (error) {
          controller.error(ticket.signal.reason instanceof ExportEnded ? ticket.signal.reason : error);
          ticket.end();
          return;
        }
        // Ended meanwhile (a timeout): the stream is errored already.
        if (ticket.signal.aborted) return;
        if (next.done) {
          controller.close();
          ticket.end();
        } else controller.enqueue(next.value);
      },
      cancel() {
        ticket.end();
        iterator.return?.().catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
