/**
 * Choices between the shared screen parts' words (header, footer, error page); the words themselves are in the
 * catalogue (app/i18n/locales/<language>/common.json, docs/decisions/0019).
 */

const STATUS_TITLES = [400, 403, 404, 405, 413, 429, 503] as const;

/** The title of an error the router raises itself (no page of the app explains them). */
export function statusTitleKey(status: number) {
  const known = STATUS_TITLES.find((code) => code === status);
  return known === undefined ? ("common:errorPage.statusTitles.other" as const) : (`common:errorPage.statusTitles.${known}` as const);
}

/** What a person can do next, by status, when the message itself does not say. */
export function nextStepKey(status: number) {
  if (status === 404) return "common:errorPage.nextStep.404" as const;
  if (status === 403) return "common:errorPage.nextStep.403" as const;
  if (status === 429) return "common:errorPage.nextStep.429" as const;
  if (status >= 500) return "common:errorPage.nextStep.500" as const;
  return "common:errorPage.nextStep.other" as const;
}

/**
 * Whether a message already says what to do next: one of its sentences is an instruction, as the language's
 * catalogue recognises them (common:errorPage.instructionOpeners: "Go back|Try again|…", how such sentences begin;
 * an entry starting with "…" is how they end, for languages that put the verb last: "…てください"). Such a
 * message gets no second, generic next step (the error pages said "Go back to the app and start signing in again."
 * and then "Go back to the app you came from and start again.").
 */
export function saysWhatToDo(message: string, openers: string): boolean {
  const entries = openers.split("|").filter(Boolean);
  return message
    .split(/(?<=[.!?。！？])\s*/)
    .map((sentence) => sentence.trim().replace(/[.!?。！？]+$/, ""))
    .some((sentence) => entries.some((entry) => (entry.startsWith("…") ? sentence.endsWith(entry.slice(1)) : sentence.startsWith(entry))));
}
