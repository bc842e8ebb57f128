export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** Whole seconds from now until `date` (never negative). */
export function secondsUntil(epochMs: number, now = Date.now()): number {
  return Math.max(0, Math.floor((epochMs - now) / SECOND));
}
