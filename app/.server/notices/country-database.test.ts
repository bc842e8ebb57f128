import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CountryDatabase, CountryDatabaseError, ipv6Number } from "./country-database.ts";

/** docs/decisions/0056: the IP-to-country CSV ranges, parsed at start and looked up by binary search. */

const FILE = [
  "1.0.0.0,1.0.0.255,AU",
  '"1.0.1.0","1.0.3.255","CN"',
  "5.0.0.0,5.255.255.255,ZZ",
  "# a comment line",
  "",
  "192.0.2.0,192.0.2.255,fr",
  "255.255.255.0,255.255.255.255,JP",
  "0.0.0.0,0.255.255.255,DE",
  "2001:db8::,2001:db8:ffff:ffff:ffff:ffff:ffff:ffff,NL",
  "2a00::,2a00:0:0:1::,BR,extra column,ignored",
  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,ES",
].join("\r\n");

const database = CountryDatabase.parse(FILE);

describe("the country database", () => {
  it("finds IPv4 addresses at both ends of a range and inside it, and nothing between ranges", () => {
    expect(database.countryOf("1.0.0.0")).toBe("AU");
    expect(database.countryOf("1.0.0.255")).toBe("AU");
    expect(database.countryOf("1.0.2.7")).toBe("CN");
    expect(database.countryOf("1.0.4.0")).toBeUndefined();
    expect(database.countryOf("0.0.0.0")).toBe("DE");
    expect(database.countryOf("255.255.255.255")).toBe("JP");
    expect(database.countryOf("255.255.254.255")).toBeUndefined();
    expect(database.countryOf("192.0.2.77")).toBe("FR");
  });

  it("answers nothing for the file's 'no country' code, for what is not an address, and for no address", () => {
    expect(database.countryOf("5.6.7.8")).toBeUndefined();
    expect(database.countryOf("unknown")).toBeUndefined();
    expect(database.countryOf("")).toBeUndefined();
    expect(database.countryOf(undefined)).toBeUndefined();
    expect(database.countryOf("1.0.0.256")).toBeUndefined();
  });

  it("finds IPv6 addresses, in every spelling, at the edges of 128 bits", () => {
    expect(database.countryOf("2001:db8::1")).toBe("NL");
    expect(database.countryOf("2001:0DB8:0000:0000:0000:0000:0000:0001")).toBe("NL");
    expect(database.countryOf("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")).toBe("NL");
    expect(database.countryOf("2001:db9::")).toBeUndefined();
    expect(database.countryOf("2a00::1:0:0:0")).toBe("BR");
    expect(database.countryOf("2a00:0:0:1::1")).toBeUndefined();
    expect(database.countryOf("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")).toBe("ES");
    expect(database.countryOf("::")).toBeUndefined();
  });

  it("looks an IPv4-mapped IPv6 address up as its IPv4 address", () => {
    expect(database.countryOf("::ffff:1.0.0.9")).toBe("AU");
    expect(database.countryOf("::ffff:c000:0201")).toBe("FR");
  });

  it("reads 128-bit numbers right", () => {
    expect(ipv6Number("::1")).toBe(1n);
    expect(ipv6Number("1::")).toBe(1n << 112n);
    expect(ipv6Number("::ffff:192.0.2.1")).toBe((0xffffn << 32n) | 0xc0000201n);
    expect(ipv6Number("fe80::1%eth0")).toBeUndefined();
  });

  it("says how much it holds", () => {
    expect(database.size).toMatchObject({ v4: 6, v6: 3 });
    expect(database.size.bytes).toBe(6 * 10 + 3 * 34);
  });

  it.each([
    ["fewer than three values", "1.0.0.0,1.0.0.255"],
    ["\"AUS\" is not a two-letter country code", "1.0.0.0,1.0.0.255,AUS"],
    ["an address that is not an IP address", "1.0.0.0,1.0.0.999,AU"],
    ["an address that is not an IP address", "16777216,16777471,AU"],
    ["a range from one address family to the other", "1.0.0.0,2001:db8::,AU"],
    ["a range that ends before it starts", "1.0.0.9,1.0.0.1,AU"],
    ["a range that ends before it starts", "2001:db8::9,2001:db8::1,AU"],
  ])("refuses a line with %s, naming the line", (why, line) => {
    expect(() => CountryDatabase.parse(`1.0.0.0,1.0.0.0,AU\n${line}\n`)).toThrow(new CountryDatabaseError(`line 2: ${why} (expected start_ip,end_ip,country_code)`));
  });

  it("refuses overlapping ranges and a file without ranges", () => {
    expect(() => CountryDatabase.parse("1.0.0.0,1.0.0.255,AU\n1.0.0.255,1.0.1.0,CN")).toThrow("two IPv4 ranges overlap");
    expect(() => CountryDatabase.parse("::1,::5,AU\n::5,::6,CN")).toThrow("two IPv6 ranges overlap");
    expect(() => CountryDatabase.parse("\n# nothing\n")).toThrow("no range in the file");
  });

  it("loads a file, and names the path of one it cannot read or parse", () => {
    const folder = mkdtempSync(join(tmpdir(), "atrium-country-"));
    const good = join(folder, "good.csv");
    const bad = join(folder, "bad.csv");
    writeFileSync(good, FILE);
    writeFileSync(bad, "1.0.0.0,1.0.0.255,AU\nnot,an,AU\n");
    expect(CountryDatabase.load(good).countryOf("1.0.0.1")).toBe("AU");
    expect(() => CountryDatabase.load(bad)).toThrow(`${bad}, line 2: an address that is not an IP address`);
    expect(() => CountryDatabase.load(join(folder, "missing.csv"))).toThrow(/cannot read .*missing\.csv: ENOENT/);
  });
});
