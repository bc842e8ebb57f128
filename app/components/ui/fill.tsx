import { Fragment, type ReactNode } from "react";

/**
 * A sentence of the screens' text catalogues with named places ("Sign in to give {who} access"), filled with
 * text or elements. Keeping whole sentences with placeholders (not fragments glued together) is what lets a
 * translation move the placeholder where its language needs it.
 */
export function fill(template: string, values: Record<string, ReactNode>): ReactNode {
  const parts = template.split(/\{(\w+)\}/);
  return parts.map((part, index) => (index % 2 === 1 ? <Fragment key={index}>{values[part] ?? `{${part}}`}</Fragment> : part || null));
}

/** The same for plain text (tab titles, attributes). */
export function fillText(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? `{${name}}`);
}
