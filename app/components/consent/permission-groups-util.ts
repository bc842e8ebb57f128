import type { PermissionGroups } from "../../.server/screens/permission-view";

/** True when a scope's groups hold nothing to show. */
export function isEmptyGroupsView(groups: PermissionGroups): boolean {
  return groups.general.length + groups.repository.length + groups.uploads.length + groups.calls.length + groups.account.length + groups.identity.length + groups.other.length === 0;
}
