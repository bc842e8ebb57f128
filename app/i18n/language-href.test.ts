import { describe, expect, it } from "vitest";
import { languageHref } from "./language-href.ts";

describe("languageHref", () => {
  it("is a query-only reference that keeps the page's other parameters and replaces lng", () => {
    expect(languageHref("?client_id=a&request_uri=b&lng=de", "fr")).toBe("?client_id=a&request_uri=b&lng=fr");
    expect(languageHref("", "ja")).toBe("?lng=ja");
  });

  // What a browser makes of the link on a page at each of these addresses: always a page of the same origin.
  it.each([
    "//evil.example/x",
    "///evil.example/x",
    "/\\evil.example/x",
    "/\\/evil.example/x",
    "/\t/evil.example/x",
    "/\n/evil.example/x",
    "/%2F%2Fevil.example/x",
    "/%5Cevil.example/x",
    "//evil.example/x?next=//evil.example",
  ])("stays on the origin of a page at %j", (path) => {
    const page = new URL(`https://pds.example${path}`);
    for (const language of ["en", "fr"]) {
      const target = new URL(languageHref(page.search, language), page);
      expect(target.origin).toBe("https://pds.example");
      expect(target.pathname).toBe(page.pathname);
      expect(target.searchParams.get("lng")).toBe(language);
    }
  });
});
