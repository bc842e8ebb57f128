/**
 * What the screens show of a grant's permissions, as the components receive it: the consent screen's and the
 * connected apps' views. The words are written by `oauth/scopes/scope-description.ts`; the components take these
 * types from here, the screens' side, never from the provider core (docs/architecture.md, "Layers").
 */
export type { IncludedPower, PermissionDescription, PermissionGroups, SummaryLine } from "../oauth/scopes/scope-description.ts";
