import { readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.ts";
import { contrastRatio, parseHex } from "../util/colour.ts";
import { brandPalette, brandStylesheet, brandView, DEFAULT_PRIMARY_COLOR, paletteVariables } from "./brand.ts";

const LIGHT = ["#ffffff", "#f1f5f9"].map(parseHex);
const DARK = ["#0f172a", "#1e293b", "#451a03"].map(parseHex);
const hexColour = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })).map((rgb) => `#${rgb.map((c) => c.toString(16).padStart(2, "0")).join("")}`);

describe("brandPalette", () => {
  it("keeps every text readable (WCAG AA) and every button edge visible, whatever the colour", () => {
    fc.assert(
      fc.property(hexColour, (hex) => {
        const palette = brandPalette(hex);
        const rgb = (value: string) => parseHex(value);
        expect(contrastRatio(rgb(palette.onBrand), rgb(palette.brand))).toBeGreaterThanOrEqual(4.5);
        expect(contrastRatio(rgb(palette.onBrand), rgb(palette.hover))).toBeGreaterThanOrEqual(4.5);
        for (const background of LIGHT) {
          expect(contrastRatio(rgb(palette.text), background)).toBeGreaterThanOrEqual(4.5);
          expect(contrastRatio(rgb(palette.edge), background)).toBeGreaterThanOrEqual(3);
        }
        for (const background of DARK) {
          expect(contrastRatio(rgb(palette.textDark), background)).toBeGreaterThanOrEqual(4.5);
          expect(contrastRatio(rgb(palette.edgeDark), background)).toBeGreaterThanOrEqual(3);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("uses the colour itself where it is readable, and white or black text on it", () => {
    expect(brandPalette("#0b6e4f")).toMatchObject({ brand: "#0b6e4f", onBrand: "#ffffff", text: "#0b6e4f" });
    // A light yellow: black text on the buttons, a darker shade for links on white.
    const yellow = brandPalette("#ffeb3b");
    expect(yellow.onBrand).toBe("#000000");
    expect(yellow.text).not.toBe("#ffeb3b");
  });

  it("is what app/tailwind.css declares as the defaults, for the screens' own blue", () => {
    const css = readFileSync(path.resolve(import.meta.dirname, "../../tailwind.css"), "utf8");
    for (const [name, value] of Object.entries(paletteVariables(brandPalette(DEFAULT_PRIMARY_COLOR)))) {
      expect(css).toContain(`${name}: ${value};`);
    }
  });
});

describe("brandView and brandStylesheet", () => {
  it("defaults: the issuer's host as the name, no logo, no links, no stylesheet", () => {
    const view = brandView(loadConfig({ PUBLIC_URL: "https://pds.example.com", ATRIUM_PLC_ROTATION_KEY: "1".repeat(64), ATRIUM_KEY_ENCRYPTION_KEY: "2".repeat(64) }));
    expect(view).toEqual({ serviceName: "pds.example.com", logoUrl: undefined, termsUrl: undefined, privacyUrl: undefined, supportUrl: undefined, stylesheet: undefined });
  });

  it("links a versioned /brand.css only when a primary colour is set", () => {
    const config = loadConfig({ ATRIUM_SERVICE_NAME: "Example Social", ATRIUM_PRIMARY_COLOR: "#0B6E4F" });
    const view = brandView(config);
    expect(view.serviceName).toBe("Example Social");
    expect(view.stylesheet).toMatch(/^\/brand\.css\?v=[0-9a-f]{12}$/);
    expect(brandView(loadConfig({ ATRIUM_PRIMARY_COLOR: "#ffeb3b" })).stylesheet).not.toBe(view.stylesheet);
    const css = brandStylesheet(config.brand);
    expect(css).toContain("--brand: #0b6e4f;");
    expect(css).toContain("--brand-fg: #ffffff;");
    expect(brandStylesheet({})).toBe("");
  });
});
