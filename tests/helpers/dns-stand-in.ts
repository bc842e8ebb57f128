import dgram from "node:dgram";
import type { AddressInfo } from "node:net";

/**
 * A tiny authoritative DNS server on 127.0.0.1 (UDP, random port) for tests:
 * it answers TXT queries for the names a test configures and NXDOMAIN for
 * every other name (NOERROR with no answer for other record types of a
 * configured name). Point a resolver at it with
 * `resolver.setServers([dns.server])`.
 *
 * Only the question section of a query is parsed (no compression in
 * questions, which resolvers do not use); additional records such as EDNS
 * OPT are ignored.
 */

const TYPE_TXT = 16;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;
const RCODE_FORMERR = 1;

export type DnsQuery = { name: string; type: number };

export type DnsStandIn = {
  /** "127.0.0.1:<port>", for dns.Resolver#setServers. */
  server: string;
  port: number;
  /**
   * Sets the TXT records of `name` (case-insensitive, no trailing dot). Each
   * record is a string (split into 255-byte character-strings as needed) or
   * an explicit list of character-strings.
   */
  setTxt(name: string, records: Array<string | string[]>): void;
  /** Removes `name`: it answers NXDOMAIN again. */
  remove(name: string): void;
  /** Every query received, in order. */
  queries: DnsQuery[];
  close(): Promise<void>;
};

export async function startDnsStandIn(): Promise<DnsStandIn> {
  const zone = new Map<string, string[][]>();
  const queries: DnsQuery[] = [];
  const socket = dgram.createSocket("udp4");

  socket.on("message", (message, remote) => {
    const response = answer(message, zone, queries);
    if (response) socket.send(response, remote.port, remote.address);
  });

  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, "127.0.0.1", () => {
      socket.off("error", reject);
      resolve();
    });
  });
  const { port } = socket.address() as AddressInfo;

  return {
    server: `127.0.0.1:${port}`,
    port,
    queries,
    setTxt(name, records) {
      zone.set(normalise(name), records.map((record) => (typeof record === "string" ? splitCharacterStrings(record) : record)));
    },
    remove(name) {
      zone.delete(normalise(name));
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function normalise(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

function splitCharacterStrings(record: string): string[] {
  const bytes = Buffer.from(record, "utf8");
  if (bytes.length === 0) return [""];
  const parts: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += 255) parts.push(bytes.subarray(offset, offset + 255).toString("utf8"));
  return parts;
}

function answer(message: Buffer, zone: Map<string, string[][]>, queries: DnsQuery[]): Buffer | undefined {
  if (message.length < 12) return undefined;
  const id = message.readUInt16BE(0);
  const flags = message.readUInt16BE(2);
  if (flags & 0x8000) return undefined; // a response, not a query
  const opcode = (flags >> 11) & 0xf;
  const recursionDesired = flags & 0x0100;
  const questionCount = message.readUInt16BE(4);

  const header = (rcode: number, questions: number, answers: number): Buffer => {
    const out = Buffer.alloc(12);
    out.writeUInt16BE(id, 0);
    // QR=1, the query's opcode, AA=1, the query's RD, RA=1, rcode.
    out.writeUInt16BE(0x8000 | (opcode << 11) | 0x0400 | recursionDesired | 0x0080 | rcode, 2);
    out.writeUInt16BE(questions, 4);
    out.writeUInt16BE(answers, 6);
    return out;
  };

  if (opcode !== 0 || questionCount !== 1) return header(RCODE_FORMERR, 0, 0);

  // QNAME: length-prefixed labels ending with a zero byte.
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    if (offset >= message.length) return header(RCODE_FORMERR, 0, 0);
    const length = message[offset]!;
    if (length === 0) {
      offset += 1;
      break;
    }
    if (length > 63 || offset + 1 + length > message.length) return header(RCODE_FORMERR, 0, 0);
    labels.push(message.subarray(offset + 1, offset + 1 + length).toString("latin1"));
    offset += 1 + length;
  }
  if (offset + 4 > message.length) return header(RCODE_FORMERR, 0, 0);
  const type = message.readUInt16BE(offset);
  const questionClass = message.readUInt16BE(offset + 2);
  const question = message.subarray(12, offset + 4);
  const name = normalise(labels.join("."));
  queries.push({ name, type });

  const records = zone.get(name);
  if (!records) return Buffer.concat([header(RCODE_NXDOMAIN, 1, 0), question]);
  if (type !== TYPE_TXT || questionClass !== CLASS_IN) return Buffer.concat([header(0, 1, 0), question]);

  const answers = records.map((strings) => {
    const rdata = Buffer.concat(
      strings.map((text) => {
        const bytes = Buffer.from(text, "utf8");
        if (bytes.length > 255) throw new Error("a TXT character-string is at most 255 bytes");
        return Buffer.concat([Buffer.from([bytes.length]), bytes]);
      }),
    );
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // pointer to the name in the question
    fixed.writeUInt16BE(TYPE_TXT, 2);
    fixed.writeUInt16BE(CLASS_IN, 4);
    fixed.writeUInt32BE(60, 6); // TTL
    fixed.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([fixed, rdata]);
  });
  return Buffer.concat([header(0, 1, answers.length), question, ...answers]);
}
