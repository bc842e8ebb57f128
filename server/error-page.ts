/**
 * The page the entry answers with itself, for the screens (the Remix app's
 * own error pages are richer): a title, one sentence, a way back. `title`
 * and `message` are fixed texts of this server, never request data.
 */
export function entryErrorPage(title: string, message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title></head><body><main><h1>${title}</h1><p>${message}</p><p><a href="/">Go to the start page</a></p></main></body></html>`;
}
