/**
 * Colour arithmetic for the operator's primary colour (docs/decisions/0018): WCAG 2.2 relative luminance and
 * contrast ratio, and the palette the screens derive from one #rrggbb so that every text on or in that colour
 * stays readable (WCAG 1.4.3, 4.5:1 for body text; 1.4.11, 3:1 for a component's edge).
 */

export type Rgb = readonly [number, number, number];

export function parseHex(hex: string): Rgb {
  const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!match) throw new Error(`not a #rrggbb colour: ${hex}`);
  return [parseInt(match[1]!, 16), parseInt(match[2]!, 16), parseInt(match[3]!, 16)];
}

export function toHex(rgb: Rgb): string {
  return `#${rgb.map((channel) => Math.round(Math.min(255, Math.max(0, channel))).toString(16).padStart(2, "0")).join("")}`;
}

/** WCAG 2.2, "relative luminance": sRGB channels linearised, weighted 0.2126, 0.7152, 0.0722. */
export function relativeLuminance(rgb: Rgb): number {
  const [r, g, b] = rgb.map((channel) => {
    const c = channel / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2.2, "contrast ratio": (L1 + 0.05) / (L2 + 0.05), the lighter over the darker; from 1 to 21. */
export function contrastRatio(a: Rgb, b: Rgb): number {
  const [light, dark] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** `from` moved `amount` (0–1) of the way towards `to`, channel by channel. */
export function mix(from: Rgb, to: Rgb, amount: number): Rgb {
  return [0, 1, 2].map((i) => from[i]! + (to[i]! - from[i]!) * amount) as unknown as Rgb;
}

const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];

/**
 * Black or white, whichever contrasts more with `background`. One of the two always reaches 4.58:1 at least
 * (the worst background, luminance ≈ 0.18, stands at (1.05 / 0.23) ≈ 4.58 from white and (0.23 / 0.05) ≈ 4.58
 * from black), so text on any colour passes WCAG AA this way: no colour needs to be refused for the buttons.
 */
export function readableOn(background: Rgb): Rgb {
  return contrastRatio(background, WHITE) >= contrastRatio(background, BLACK) ? WHITE : BLACK;
}

/**
 * `colour` moved towards `target` (black to darken, white to lighten) in small steps until it contrasts at least
 * `ratio` with every one of `backgrounds`: the nearest shade of the brand that is readable as text there.
 */
export function shadeUntilReadable(colour: Rgb, target: Rgb, backgrounds: readonly Rgb[], ratio = 4.5): Rgb {
  for (let step = 0; step <= 40; step++) {
    const shade = mix(colour, target, step / 40);
    const rounded = parseHex(toHex(shade));
    if (backgrounds.every((background) => contrastRatio(rounded, background) >= ratio)) return rounded;
  }
  return target;
}
