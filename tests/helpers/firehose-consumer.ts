import { WebSocket } from "ws";
import { decodeFrame, type Frame } from "./subscribe-repos-lexicon.ts";

/**
 * A firehose consumer over a real WebSocket: every frame it receives is
 * decoded and checked against the subscribeRepos lexicon as it arrives (a
 * frame that breaks it fails whatever the test awaits next). Tests wait on
 * frames and on the close, never on time.
 */
export class FirehoseConsumer {
  readonly frames: Frame[] = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  private failure: Error | undefined;
  private readonly waiters = new Set<() => void>();
  private readonly socket: WebSocket;

  constructor(url: string) {
    this.socket = new WebSocket(url);
    this.socket.binaryType = "nodebuffer";
    this.opened = new Promise((resolve, reject) => {
      this.socket.once("open", () => resolve());
      this.socket.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)));
      this.socket.once("error", reject);
    });
    this.opened.catch(() => {});
    this.closed = new Promise((resolve) => this.socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
    this.socket.on("message", (data: Buffer) => {
      try {
        this.frames.push(decodeFrame(new Uint8Array(data)));
      } catch (error) {
        this.failure = error as Error;
      }
      this.notify();
    });
    void this.closed.then(() => this.notify());
  }

  /** The seqs of the messages received so far (#info and errors have none). */
  seqs(): number[] {
    return this.frames.flatMap((frame) => (frame.kind === "message" && typeof frame.body.seq === "number" ? [frame.body.seq] : []));
  }

  /** Resolves once `predicate` holds for the frames received; rejects if a frame broke the lexicon or the socket closed first. */
  async until(predicate: (frames: Frame[]) => boolean): Promise<void> {
    let isClosed = false;
    void this.closed.then(() => (isClosed = true));
    for (;;) {
      if (this.failure) throw this.failure;
      if (predicate(this.frames)) return;
      if (isClosed) throw new Error(`closed before the expected frames (got ${this.frames.length}: ${JSON.stringify(this.summary())})`);
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  /** Waits until the last received message carries `seq`. */
  untilSeq(seq: number): Promise<void> {
    return this.until(() => this.seqs().includes(seq));
  }

  /** Waits for the close and returns it; rejects if any frame broke the lexicon. */
  async closeReceived(): Promise<{ code: number; reason: string }> {
    const closed = await this.closed;
    if (this.failure) throw this.failure;
    return closed;
  }

  /** Stops reading from the socket: the server's queue for it fills up. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  close(): void {
    this.socket.close();
  }

  summary(): string[] {
    return this.frames.map((frame) => (frame.kind === "error" ? `error:${frame.error}` : `${frame.type}:${String(frame.body.seq ?? frame.body.name)}`));
  }

  private notify(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}

/** The HTTP status with which an upgrade to `url` is refused (throws when it is accepted). */
export async function upgradeRefusal(url: string, headers: Record<string, string> = {}): Promise<number> {
  const answer = await upgradeAnswer(url, headers);
  if (answer.status === 101) {
    answer.close();
    throw new Error(`the upgrade to ${url} was accepted`);
  }
  return answer.status;
}

/**
 * How the server answers an upgrade to `url`: 101 with the open socket's close (which resolves once it has closed),
 * or the refusal's status and its Retry-After.
 */
export function upgradeAnswer(url: string, headers: Record<string, string> = {}): Promise<{ status: number; retryAfter: string | undefined; close: () => Promise<void> }> {
  const socket = new WebSocket(url, { headers });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return new Promise((resolve, reject) => {
    const close = () => {
      socket.close();
      return closed;
    };
    socket.once("open", () => resolve({ status: 101, retryAfter: undefined, close }));
    socket.once("unexpected-response", (_req, res) => {
      const retryAfter = res.headers["retry-after"];
      resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined, close: () => closed });
      res.resume();
      socket.terminate();
    });
    socket.once("error", reject);
  });
}
