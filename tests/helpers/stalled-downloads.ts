import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import net from "node:net";

/**
 * Downloads by clients that send their request and then read nothing, and what a server process holds for them,
 * measured from outside it (Linux /proc): the bytes it has read (`rchar`: files, database sockets, anything) minus
 * the bytes the kernel holds for those connections (the server's send queues and the clients' receive queues, which
 * fill up to TCP's limits and then make the server's writes wait). What is left is what the server read and still
 * holds in its own memory (docs/decisions/0043). Used by the blob tests and `bench/blob-downloads.ts`.
 */

export type StalledClient = { socket: net.Socket; port: number };

/** Opens a connection per request and writes `GET path`; nothing is ever read from it (the socket is paused). */
export async function stalledDownloads(port: number, path: string, count: number): Promise<StalledClient[]> {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<StalledClient>((resolve, reject) => {
          const socket = net.connect(port, "127.0.0.1", () => {
            socket.pause();
            socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
            resolve({ socket, port: socket.localPort! });
          });
          socket.once("error", reject);
        }),
    ),
  );
}

/** Bytes the process has read so far, through any read system call (proc(5), /proc/<pid>/io `rchar`). */
export function bytesRead(pid: number): number {
  const line = readFileSync(`/proc/${pid}/io`, "utf8").split("\n").find((entry) => entry.startsWith("rchar:"));
  if (!line) throw new Error(`no rchar in /proc/${pid}/io`);
  return Number(line.slice("rchar:".length).trim());
}

type Queues = { sent: number; received: number };

/**
 * For each client port, the bytes the kernel holds on that connection: the server side's send queue (written, not
 * yet taken by the client) and the client side's receive queue (arrived, not read). proc(5), /proc/net/tcp:
 * `tx_queue:rx_queue` in hexadecimal, addresses as `hexaddr:hexport`.
 */
export function kernelQueues(serverPort: number, clientPorts: readonly number[]): Map<number, Queues> {
  const wanted = new Set(clientPorts);
  const queues = new Map<number, Queues>(clientPorts.map((port) => [port, { sent: 0, received: 0 }]));
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 5) continue;
      const localPort = parseInt(fields[1]!.split(":").at(-1)!, 16);
      const remotePort = parseInt(fields[2]!.split(":").at(-1)!, 16);
      const [tx, rx] = fields[4]!.split(":").map((hex) => parseInt(hex, 16)) as [number, number];
      if (localPort === serverPort && wanted.has(remotePort)) queues.get(remotePort)!.sent += tx;
      if (wanted.has(localPort) && remotePort === serverPort) queues.get(localPort)!.received += rx;
    }
  }
  return queues;
}

/** The bytes the kernel holds on all these connections. */
export function bytesInKernel(serverPort: number, clientPorts: readonly number[]): number {
  let total = 0;
  for (const { sent, received } of kernelQueues(serverPort, clientPorts).values()) total += sent + received;
  return total;
}

/** The process's open files whose path starts with `folder`. */
export function openFilesUnder(pid: number, folder: string): number {
  let count = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(folder)) count++;
    } catch {
      // Closed while listed.
    }
  }
  return count;
}

/** Resident memory of the process, in bytes (/proc/<pid>/status VmRSS). */
export function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((entry) => entry.startsWith("VmRSS:"));
  if (!line) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(line.replace(/\D+/g, "")) * 1024;
}

/**
 * Polls `sample` until it has not changed for `stable` polls in a row: a server whose writes all wait for clients
 * that do not read stops reading from its store, and this returns once it has (or throws after `limit` polls).
 */
export async function untilSteady(sample: () => number, options: { stable?: number; everyMs?: number; limit?: number } = {}): Promise<number> {
  const { stable = 10, everyMs = 50, limit = 2000 } = options;
  let last = sample();
  let same = 0;
  for (let poll = 0; poll < limit; poll++) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    const now = sample();
    same = now === last ? same + 1 : 0;
    last = now;
    if (same >= stable) return now;
  }
  throw new Error("the sample never settled");
}

/** Polls `condition` until it holds (or throws after `limit` polls). */
export async function until(condition: () => boolean, options: { everyMs?: number; limit?: number } = {}): Promise<void> {
  const { everyMs = 20, limit = 5000 } = options;
  for (let poll = 0; poll < limit; poll++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error("the condition never held");
}
