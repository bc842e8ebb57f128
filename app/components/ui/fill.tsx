import { Fragment, type ReactNode } from "react";

/**
 * A translated sentence with named places for elements ("Sign in to give {who} access": the catalogue's
 * "{{who}}" kept as "{who}" by `slots("who")`, ui/i18n.tsx), filled with those elements. Keeping whole sentences
 * with placeholders (not fragments glued together) is what lets a translation move the placeholder where its
 * language needs it.
 */
export function fill(template: string, values: Record<string, ReactNode>): ReactNode {
  const parts = template.split(/\{(\w+)\}/);
  return parts.map((part, index) => (index % 2 === 1 ? <Fragment key={index}>{values[part] ?? `{${part}}`}</Fragment> : part || null));
}
