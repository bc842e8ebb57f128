import { readFileSync } from "node:fs";
import { isIPv6 } from "node:net";

/**
 * Where a network is, roughly: the country of an address, from a local copy of one of the free IP-to-country files
 * (docs/decisions/0056). The file is CSV, one range a line, `start_ip,end_ip,country_code` (IPv4 and IPv6 ranges in
 * one file, values optionally in double quotes, further columns ignored), as DB-IP's "IP to Country Lite" and files
 * like it ship. It is read once, at start, into sorted typed arrays; a lookup is a binary search. No address ever
 * leaves the machine for it.
 */

/** A line of the file the database refused, with why: the start stops on it (ATRIUM_COUNTRY_DATABASE). */
export class CountryDatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CountryDatabaseError";
  }
}

/** The codes files use for "no country" (DB-IP's ZZ, others' "-"): the lookup answers nothing for them. */
const NO_COUNTRY = new Set(["ZZ", "XX", "--"]);

type Range<T> = { start: T; end: T; country: number };

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** An IPv4 address (dotted decimal) as its 32-bit number; undefined when it is not one. Hand-parsed: a file has a million. */
export function ipv4Number(address: string): number | undefined {
  const parts = IPV4.exec(address);
  if (!parts) return undefined;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const part = Number(parts[i]);
    if (part > 255) return undefined;
    value = value * 256 + part;
  }
  return value;
}

/** An IPv6 address as its 128-bit number; undefined when it is not one (a zone index is not accepted). */
export function ipv6Number(address: string): bigint | undefined {
  if (!isIPv6(address) || address.includes("%")) return undefined;
  let text = address;
  // An embedded IPv4 tail (::ffff:192.0.2.1) is two groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (tail !== undefined) {
    const v4 = ipv4Number(tail)!;
    text = `${text.slice(0, -tail.length)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, rest] = text.includes("::") ? text.split("::") : [text, undefined];
  const headGroups = head ? head.split(":") : [];
  const restGroups = rest ? rest.split(":") : [];
  const groups = rest === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - restGroups.length).fill("0"), ...restGroups];
  // Four 32-bit words as numbers, then one bigint: far cheaper than a bigint step per group.
  const word = (i: number) => BigInt(Number.parseInt(groups[i]!, 16) * 65536 + Number.parseInt(groups[i + 1]!, 16));
  return (word(0) << 96n) | (word(2) << 64n) | (word(4) << 32n) | word(6);
}

const MAPPED_PREFIX = 0xffffn << 32n;

/** The address as the database looks it up: an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4 address. */
function parseAddress(address: string): { v4: number } | { v6: bigint } | undefined {
  const v4 = ipv4Number(address);
  if (v4 !== undefined) return { v4 };
  const v6 = ipv6Number(address);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === MAPPED_PREFIX >> 32n) return { v4: Number(v6 & 0xffffffffn) };
  return { v6 };
}

function packCountry(code: string): number {
  return (code.charCodeAt(0) << 8) | code.charCodeAt(1);
}

function unpackCountry(packed: number): string {
  return String.fromCharCode(packed >> 8, packed & 0xff);
}

function unquoted(value: string): string {
  const trimmed = value.trim();
  return trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1) : trimmed;
}

/** Sorted by start; two ranges that overlap are a broken file (which country would an address be in?). */
function sortedWithoutOverlap<T extends number | bigint>(ranges: Range<T>[], family: string): Range<T>[] {
  // The files ship sorted: sorting is for one that is not (a check of order costs a pass; a sort, far more).
  if (ranges.some((range, i) => i > 0 && range.start < ranges[i - 1]!.start)) ranges.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i]!.start <= ranges[i - 1]!.end) throw new CountryDatabaseError(`two ${family} ranges overlap (one starts inside the other)`);
  }
  return ranges;
}

/** The index of the last range whose start is at or before `value`, or -1. */
function lastStartAtOrBefore(starts: Uint32Array, value: number): number {
  let low = 0;
  let high = starts.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    if (starts[middle]! <= value) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found;
}

/** IPv6 numbers as two 64-bit halves each, so that the arrays are typed (a bigint[] costs several times more). */
class Ipv6Ranges {
  private readonly startHigh: BigUint64Array;
  private readonly startLow: BigUint64Array;
  private readonly endHigh: BigUint64Array;
  private readonly endLow: BigUint64Array;
  private readonly countries: Uint16Array;

  constructor(ranges: Range<bigint>[]) {
    const count = ranges.length;
    this.startHigh = new BigUint64Array(count);
    this.startLow = new BigUint64Array(count);
    this.endHigh = new BigUint64Array(count);
    this.endLow = new BigUint64Array(count);
    this.countries = new Uint16Array(count);
    ranges.forEach((range, i) => {
      this.startHigh[i] = range.start >> 64n;
      this.startLow[i] = BigInt.asUintN(64, range.start);
      this.endHigh[i] = range.end >> 64n;
      this.endLow[i] = BigInt.asUintN(64, range.end);
      this.countries[i] = range.country;
    });
  }

  get length(): number {
    return this.countries.length;
  }

  get bytes(): number {
    return this.startHigh.byteLength * 4 + this.countries.byteLength;
  }

  /** The country of the range holding `value`: a binary search on (high, low) of the starts. */
  find(value: bigint): number | undefined {
    const high = value >> 64n;
    const low = BigInt.asUintN(64, value);
    let first = 0;
    let last = this.length - 1;
    let found = -1;
    while (first <= last) {
      const middle = (first + last) >>> 1;
      const startHigh = this.startHigh[middle]!;
      if (startHigh < high || (startHigh === high && this.startLow[middle]! <= low)) {
        found = middle;
        first = middle + 1;
      } else {
        last = middle - 1;
      }
    }
    if (found < 0) return undefined;
    const endHigh = this.endHigh[found]!;
    return endHigh > high || (endHigh === high && this.endLow[found]! >= low) ? this.countries[found] : undefined;
  }
}

/** The country ranges of one file: IPv4 in 32-bit arrays, IPv6 in 64-bit halves, each sorted by start. */
export class CountryDatabase {
  private readonly v4Starts: Uint32Array;
  private readonly v4Ends: Uint32Array;
  private readonly v4Countries: Uint16Array;
  private readonly v6: Ipv6Ranges;

  private constructor(v4: Range<number>[], v6: Range<bigint>[]) {
    this.v4Starts = Uint32Array.from(v4, (range) => range.start);
    this.v4Ends = Uint32Array.from(v4, (range) => range.end);
    this.v4Countries = Uint16Array.from(v4, (range) => range.country);
    this.v6 = new Ipv6Ranges(v6);
  }

  /** Parses the file's text; a malformed line, overlapping ranges or a file with no range throw a CountryDatabaseError naming the problem. */
  static parse(text: string): CountryDatabase {
    const v4: Range<number>[] = [];
    const v6: Range<bigint>[] = [];
    let lineNumber = 0;
    for (const rawLine of text.split("\n")) {
      lineNumber++;
      const line = rawLine.trim();
      if (line === "" || line.startsWith("#")) continue;
      const [startText, endText, codeText] = line.split(",").map(unquoted);
      const refuse = (why: string) => new CountryDatabaseError(`line ${lineNumber}: ${why} (expected start_ip,end_ip,country_code)`);
      if (startText === undefined || endText === undefined || codeText === undefined) throw refuse("fewer than three values");
      const code = codeText.toUpperCase();
      if (!/^[A-Z]{2}$/.test(code) && code !== "--") throw refuse(`"${codeText.slice(0, 16)}" is not a two-letter country code`);
      const start = parseAddress(startText);
      const end = parseAddress(endText);
      if (!start || !end) throw refuse("an address that is not an IP address");
      if ("v4" in start !== "v4" in end) throw refuse("a range from one address family to the other");
      const country = NO_COUNTRY.has(code) ? 0 : packCountry(code);
      if ("v4" in start && "v4" in end) {
        if (start.v4 > end.v4) throw refuse("a range that ends before it starts");
        // A range of IPv4-mapped addresses written as IPv6 is an IPv4 range: both are looked up the same way.
        v4.push({ start: start.v4, end: end.v4, country });
      } else if ("v6" in start && "v6" in end) {
        if (start.v6 > end.v6) throw refuse("a range that ends before it starts");
        v6.push({ start: start.v6, end: end.v6, country });
      }
    }
    if (v4.length + v6.length === 0) throw new CountryDatabaseError("no range in the file");
    return new CountryDatabase(sortedWithoutOverlap(v4, "IPv4"), sortedWithoutOverlap(v6, "IPv6"));
  }

  /** Reads the file at `path`; unreadable or malformed, a CountryDatabaseError that says which and where. */
  static load(path: string): CountryDatabase {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      throw new CountryDatabaseError(`cannot read ${path}: ${(error as Error).message}`);
    }
    try {
      return CountryDatabase.parse(text);
    } catch (error) {
      if (error instanceof CountryDatabaseError) throw new CountryDatabaseError(`${path}, ${error.message}`);
      throw error;
    }
  }

  /** How many ranges of each family it holds, and the bytes its arrays take. */
  get size(): { v4: number; v6: number; bytes: number } {
    return { v4: this.v4Starts.length, v6: this.v6.length, bytes: this.v4Starts.byteLength * 2 + this.v4Countries.byteLength + this.v6.bytes };
  }

  /** The two-letter country code (ISO 3166-1 alpha-2, upper case) of the address; undefined when unknown or not an address. */
  countryOf(address: string | undefined): string | undefined {
    const parsed = address === undefined ? undefined : parseAddress(address);
    if (!parsed) return undefined;
    let packed: number | undefined;
    if ("v4" in parsed) {
      const i = lastStartAtOrBefore(this.v4Starts, parsed.v4);
      packed = i >= 0 && parsed.v4 <= this.v4Ends[i]! ? this.v4Countries[i] : undefined;
    } else {
      packed = this.v6.find(parsed.v6);
    }
    return packed ? unpackCountry(packed) : undefined;
  }
}
