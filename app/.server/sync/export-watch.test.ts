import { describe, expect, it } from "vitest";
import { ExportEnded, ExportWatch, type ExportTicket } from "./export-watch.ts";

const LIMITS = { perAddress: 2, inAll: 3, idleMs: 60_000, maxMs: 900_000 };

function watchAt(start = 1_000_000) {
  const clock = { now: start };
  const ended: Array<{ bucket: string; reason: string }> = [];
  const watch = new ExportWatch(LIMITS, () => clock.now, (ticket, reason) => ended.push({ bucket: ticket.bucket, reason: reason.reason }));
  return { clock, watch, ended };
}

const reasonOf = (ticket: ExportTicket) => (ticket.signal.reason instanceof ExportEnded ? ticket.signal.reason.reason : ticket.signal.aborted ? "over" : "open");

/** The repository exports' caps and timeouts (docs/decisions/0042), on the watch's own clock. */
describe("ExportWatch", () => {
  it("admits exports up to the cap of their bucket, and up to the process's cap in all; an end frees the place", () => {
    const { watch } = watchAt();
    const a1 = watch.admit("192.0.2.1")!;
    const a2 = watch.admit("192.0.2.1")!;
    expect(watch.admit("192.0.2.1")).toBeUndefined();
    const b1 = watch.admit("2001:db8:1:2::/64")!;
    expect([a1, a2, b1].every(Boolean)).toBe(true);
    // Three in all: another bucket is refused too.
    expect(watch.admit("198.51.100.7")).toBeUndefined();
    a1.end();
    a1.end();
    expect(watch.state().open).toBe(2);
    expect(watch.admit("192.0.2.1")).toBeDefined();
    expect(watch.admit("198.51.100.7")).toBeUndefined();
    b1.end();
    expect(watch.admit("198.51.100.7")).toBeDefined();
  });

  it("ends an export whose client took nothing for idleMs, with its signal's reason; progress starts the idle time again", () => {
    const { clock, watch, ended } = watchAt();
    const reading = watch.admit("192.0.2.1")!;
    const stalled = watch.admit("192.0.2.2")!;
    clock.now += LIMITS.idleMs - 1;
    reading.progress();
    watch.sweep();
    expect([reasonOf(reading), reasonOf(stalled)]).toEqual(["open", "open"]);
    clock.now += 1;
    watch.sweep();
    expect([reasonOf(reading), reasonOf(stalled)]).toEqual(["open", "idle"]);
    expect(ended).toEqual([{ bucket: "192.0.2.2", reason: "idle" }]);
    expect(watch.state().open).toBe(1);
  });

  it("ends an export maxMs after it began, however its client reads", () => {
    const { clock, watch } = watchAt();
    const ticket = watch.admit("192.0.2.1")!;
    for (let elapsed = 0; elapsed + LIMITS.idleMs / 2 < LIMITS.maxMs; elapsed += LIMITS.idleMs / 2) {
      clock.now += LIMITS.idleMs / 2;
      ticket.progress();
      watch.sweep();
      expect(reasonOf(ticket)).toBe("open");
    }
    clock.now = ticket.startedAt + LIMITS.maxMs;
    ticket.progress();
    watch.sweep();
    expect(reasonOf(ticket)).toBe("deadline");
  });

  it("counts the bytes each export holds (read, not yet handed on) and every byte read", () => {
    const { watch } = watchAt();
    const one = watch.admit("192.0.2.1")!;
    const two = watch.admit("192.0.2.2")!;
    one.read(1000);
    one.handedOn(400);
    two.read(50);
    expect(watch.state()).toEqual({ open: 2, heldBytes: 650, bytesRead: 1050 });
    one.end();
    expect(watch.state()).toEqual({ open: 1, heldBytes: 50, bytesRead: 1050 });
  });

  it("ends every export when closed (shutdown)", () => {
    const { watch } = watchAt();
    const tickets = [watch.admit("192.0.2.1")!, watch.admit("192.0.2.2")!];
    watch.close();
    expect(tickets.map(reasonOf)).toEqual(["shutdown", "shutdown"]);
    expect(watch.state().open).toBe(0);
  });
});
