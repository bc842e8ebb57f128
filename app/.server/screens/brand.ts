import { createHash } from "node:crypto";
import type { Brand, Config } from "../config.ts";
import { contrastRatio, mix, parseHex, readableOn, shadeUntilReadable, toHex, type Rgb } from "../util/colour.ts";

/**
 * The operator's brand on every screen (docs/decisions/0018): the service name and logo in the header, the terms,
 * privacy and support links in the footer, and the primary colour. The CSP allows no inline style (style-src
 * 'self'), so the colour reaches the pages as a small stylesheet of this server, /brand.css, that sets the CSS
 * variables app/tailwind.css declares; without ATRIUM_PRIMARY_COLOR no such sheet is linked at all.
 */

/** What every page shows of the brand: plain data, safe to send to the browser. */
export type BrandView = {
  serviceName: string;
  logoUrl?: string;
  termsUrl?: string;
  privacyUrl?: string;
  supportUrl?: string;
  /** The path of /brand.css with a version of its content (cached for a year), when a primary colour is set. */
  stylesheet?: string;
};

export function brandView(config: Pick<Config, "brand">): BrandView {
  const { brand } = config;
  return {
    serviceName: brand.serviceName,
    logoUrl: brand.logoUrl,
    termsUrl: brand.termsUrl,
    privacyUrl: brand.privacyUrl,
    supportUrl: brand.supportUrl,
    stylesheet: brand.primaryColor ? `/brand.css?v=${createHash("sha256").update(brandStylesheet(brand)).digest("hex").slice(0, 12)}` : undefined,
  };
}

/** The colours the screens use, all derived from the one primary colour. */
export type BrandPalette = {
  /** The primary button's background, in light and dark mode alike. */
  brand: string;
  /** Text on that background: black or white, whichever contrasts more (never below 4.58:1). */
  onBrand: string;
  /** The button's background under the pointer: a step further from its text colour. */
  hover: string;
  /** Links and accents on the light pages: the primary colour, darkened until it reads at 4.5:1 there. */
  text: string;
  /** The same on the dark pages, lightened until it reads at 4.5:1. */
  textDark: string;
  /** The button's edge on light and on dark pages: the colour itself where it stands out at 3:1, else its readable shade. */
  edge: string;
  edgeDark: string;
};

const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];
/** Where links stand on the light pages: white cards, the slate-100 panels (the darkest of them). */
const LIGHT_BACKGROUNDS: Rgb[] = [parseHex("#ffffff"), parseHex("#f1f5f9")];
/** ...and on the dark ones: slate-900 cards, slate-800 panels, amber-950 cautions (the lightest of them). */
const DARK_BACKGROUNDS: Rgb[] = [parseHex("#0f172a"), parseHex("#1e293b"), parseHex("#451a03")];

export function brandPalette(hex: string): BrandPalette {
  const colour = parseHex(hex);
  const onBrand = readableOn(colour);
  const text = shadeUntilReadable(colour, BLACK, LIGHT_BACKGROUNDS);
  const textDark = shadeUntilReadable(colour, WHITE, DARK_BACKGROUNDS);
  const standsOut = (backgrounds: Rgb[]) => backgrounds.every((background) => contrastRatio(colour, background) >= 3);
  return {
    brand: toHex(colour),
    onBrand: toHex(onBrand),
    hover: toHex(mix(colour, toHex(onBrand) === toHex(WHITE) ? BLACK : WHITE, 0.15)),
    text: toHex(text),
    textDark: toHex(textDark),
    edge: standsOut(LIGHT_BACKGROUNDS) ? toHex(colour) : toHex(text),
    edgeDark: standsOut(DARK_BACKGROUNDS) ? toHex(colour) : toHex(textDark),
  };
}

/** The screens' own blue (Tailwind's blue-700), whose palette app/tailwind.css writes out as the defaults. */
export const DEFAULT_PRIMARY_COLOR = "#1d4ed8";

/** The CSS variables of a palette, as app/tailwind.css names them. */
export function paletteVariables(palette: BrandPalette): Record<string, string> {
  return {
    "--brand": palette.brand,
    "--brand-fg": palette.onBrand,
    "--brand-hover": palette.hover,
    "--brand-text": palette.text,
    "--brand-text-dark": palette.textDark,
    "--brand-edge": palette.edge,
    "--brand-edge-dark": palette.edgeDark,
  };
}

/** /brand.css: the primary colour's palette; empty when none is set (the stylesheet's defaults stand). */
export function brandStylesheet(brand: Pick<Brand, "primaryColor">): string {
  if (!brand.primaryColor) return "";
  const lines = Object.entries(paletteVariables(brandPalette(brand.primaryColor))).map(([name, value]) => `  ${name}: ${value};`);
  return `:root {\n${lines.join("\n")}\n}\n`;
}
