import { describe, expect, it } from "vitest";
import { urlAllowed, wholeNumberIn } from "./parsers.ts";

/** The shapes every setting is parsed with (config/parsers.ts): one rule per shape, whichever variable uses it. */
describe("urlAllowed", () => {
  const href = (text: string, rule: Parameters<typeof urlAllowed>[1]) => urlAllowed(text, rule)?.href;

  it("takes https; plain http only where the rule says, to any host or to loopback alone", () => {
    expect(href("https://relay.example/", {})).toBe("https://relay.example/");
    expect(href("http://relay.example/", {})).toBeUndefined();
    expect(href("http://10.0.0.5:3000", { http: "anywhere" })).toBe("http://10.0.0.5:3000/");
    expect(href("http://10.0.0.5:3000", { http: "loopback" })).toBeUndefined();
    for (const loopback of ["http://127.0.0.1:2582", "http://localhost:2582", "http://[::1]:2582", "http://127.9.9.9"]) expect(href(loopback, { http: "loopback" }), loopback).toBeDefined();
  });

  it("never takes a user or a password, whatever else is allowed", () => {
    expect(href("https://user:pw@appview.example", { http: "anywhere" })).toBeUndefined();
    expect(href("https://user@appview.example", {})).toBeUndefined();
  });

  it("takes mailto: only where asked, and no other scheme", () => {
    expect(href("mailto:help@example.com", { mailto: true })).toBe("mailto:help@example.com");
    expect(href("mailto:help@example.com", {})).toBeUndefined();
    for (const other of ["javascript:alert(1)", "ftp://mod.example.com", "data:text/html,x", "not a url"]) expect(href(other, { mailto: true, http: "anywhere" }), other).toBeUndefined();
  });

  it("refuses a query, a fragment or a path where the rule says a base URL has none", () => {
    expect(href("https://relay.example/?x=1", { query: false })).toBeUndefined();
    expect(href("https://relay.example/#top", { fragment: false })).toBeUndefined();
    expect(href("https://relay.example/xrpc", { path: false })).toBeUndefined();
    expect(href("https://relay.example/?x=1#top", {})).toBe("https://relay.example/?x=1#top");
  });
});

describe("wholeNumberIn", () => {
  it("takes digits within the bounds and nothing a number parser would also take", () => {
    expect(wholeNumberIn("42", 1, 100)).toBe(42);
    for (const text of ["0", "101", "4.2", "1e2", "0x10", "-1", " 42", "", "9007199254740993"]) expect(wholeNumberIn(text, 1, 100), text).toBeUndefined();
  });
});
