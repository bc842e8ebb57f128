import { Fragment } from "react";

/**
 * A technical name (an NSID, a host, a URL, a DID, a scope) that wraps only between its parts: a <wbr> after each
 * dot, slash, colon, question mark, ampersand, hash, equals or plus sign and before each percent-escape (%3A), never
 * inside "://", and overflow-wrap: break-word as the last resort for a single part wider than the screen. Never
 * word-break: break-all, which cuts "app.bsky.fe|ed.post" anywhere.
 *
 * In running text it is one inline block no wider than its line (`block`: a line of its own): a name that fits on
 * a line moves to the next one whole, and only a name longer than a line wraps between its parts (issue 28, item 21:
 * "skyline.|example.com" broke at the end of a line it could have started).
 */
export function Identifier({ text, className = "", block = false }: { text: string; className?: string; block?: boolean }) {
  const parts = text.split(/(?<=[.?&#=+])|(?<=[:/])(?!\/)|(?=%[0-9A-Fa-f]{2})/);
  return (
    <span className={`${block ? "block" : "inline-block max-w-full"} wrap-break-word ${className}`}>
      {parts.map((part, index) => (
        <Fragment key={index}>
          {index > 0 ? <wbr /> : null}
          {part}
        </Fragment>
      ))}
    </span>
  );
}
