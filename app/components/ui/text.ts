/**
 * The shared screen parts' words (header, footer, error page), in one place per screen so that a translation
 * catalogue can take them over as they are: whole sentences, named placeholders ({name}), no glued fragments.
 */
export const brandText = {
  /** Tab titles: the page, then the service. */
  pageTitle: "{page} · {service}",
  tagline: "Your account server",
  footerLabel: "About {service}",
  terms: "Terms of service",
  privacy: "Privacy policy",
  support: "Help and support",
  newTab: "(opens in a new tab)",
};

export const errorText = {
  eyebrow: "Error {status}",
  whereToGo: "Where to go",
  startPage: "Start page",
  yourAccount: "Your account",
  /** What a person can do next, by status, when the message itself does not say. */
  nextStep: {
    404: "Check the address, or start again from the start page.",
    403: "Reload the page you came from and try again.",
    429: "Wait a minute, then try again.",
    500: "This is a problem on the server. Try again in a moment.",
    other: "Go back to the app you came from and start again.",
  },
  /** Titles of the errors the router raises itself (no page of the app explains them). */
  statusTitles: {
    400: "This request could not be understood",
    403: "This is not allowed",
    404: "Page not found",
    405: "This page cannot do that",
    413: "That was too large",
    429: "Too many requests",
    503: "The server is busy",
    other: "Something went wrong",
  } as Record<number | "other", string>,
  /**
   * How a message that already tells the person what to do begins (its sentences are checked): such a message gets
   * no second, generic next step (the error pages said "Go back to the app and start signing in again." and then
   * "Go back to the app you came from and start again."). A translation translates these with the messages.
   */
  instructionOpeners: ["Go back", "Try again", "Try the", "Reload", "Wait", "Check", "Start again", "Sign in", "Turn it on", "Enter", "Use "],
  notFound: "There is nothing at this address.",
  couldNotAnswer: "The server could not answer this request.",
  couldNotShow: "The server could not show this page. Please try again.",
};

/** Whether a message already says what to do next (one of its sentences starts with an instruction). */
export function saysWhatToDo(message: string): boolean {
  return message
    .split(/(?<=[.!?])\s+/)
    .some((sentence) => errorText.instructionOpeners.some((opener) => sentence.trim().startsWith(opener)));
}

export function nextStepFor(status: number): string {
  if (status === 404) return errorText.nextStep[404];
  if (status === 403) return errorText.nextStep[403];
  if (status === 429) return errorText.nextStep[429];
  if (status >= 500) return errorText.nextStep[500];
  return errorText.nextStep.other;
}
