import net from "node:net";
import { Agent, fetch as undiciFetch, type RequestInit, type Response } from "undici";

/** Clients the tests play: raw sockets, and fetch from a chosen source address. */

export type RawExchange = { text: string; closedByServer: boolean };

/**
 * Sends raw bytes on one connection and collects what comes back until the
 * server closes it, `enough` says so, or `ms` pass.
 */
export function rawExchange(
  port: number,
  write: (socket: net.Socket) => void,
  ms = 4000,
  enough: (text: string) => boolean = () => false,
): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    let text = "";
    let settled = false;
    const socket = net.connect(port, "127.0.0.1", () => write(socket));
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer });
    };
    socket.on("data", (chunk) => {
      text += chunk.toString("latin1");
      if (enough(text)) finish(false);
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" || error.code === "EPIPE" ? finish(true) : reject(error)));
    const timer = setTimeout(() => finish(false), ms);
  });
}

export type SourceFetch = (url: string, init?: RequestInit) => Promise<Response>;

/**
 * fetch whose connections come from `address`. On Linux the whole of
 * 127.0.0.0/8 is local, so one test can be several clients (an attacker at
 * 127.0.0.2, a bystander at 127.0.0.3) while a proxy or server listens on
 * 127.0.0.1: each is seen with its own address, as on a network.
 */
export function fetchFrom(address: string): SourceFetch {
  const dispatcher = new Agent({ localAddress: address });
  return (url, init) => undiciFetch(url, { ...init, dispatcher });
}
