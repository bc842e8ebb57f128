import { Fragment } from "react";

/**
 * A technical name (an NSID, a host, a URL, a DID, a scope) that wraps only between its parts: a <wbr> after each
 * dot, slash, colon, question mark, ampersand, hash, equals or plus sign and before each percent-escape (%3A), and
 * overflow-wrap: break-word as the last resort for a single part wider than the screen. Never
 * word-break: break-all, which cuts "app.bsky.fe|ed.post" anywhere.
 */
export function Identifier({ text, className = "" }: { text: string; className?: string }) {
  const parts = text.split(/(?<=[./:?&#=+])|(?=%[0-9A-Fa-f]{2})/);
  return (
    <span className={`wrap-break-word ${className}`}>
      {parts.map((part, index) => (
        <Fragment key={index}>
          {index > 0 ? <wbr /> : null}
          {part}
        </Fragment>
      ))}
    </span>
  );
}
