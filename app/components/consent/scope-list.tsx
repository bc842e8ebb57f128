import { Identifier } from "../ui/identifier";

/** A granted scope as it is written, one value per line (technical details; each wraps between its parts). */
export function ScopeList({ scope, id, className }: { scope: string; id?: string; className: string }) {
  return (
    <ul id={id} className={className}>
      {scope
        .split(" ")
        .filter(Boolean)
        .map((value) => (
          <li key={value}>
            <Identifier text={value} />
          </li>
        ))}
    </ul>
  );
}
