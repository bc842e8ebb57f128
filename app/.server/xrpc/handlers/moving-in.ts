import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest } from "../xrpc-error.ts";

const IMPORT_REPO = "com.atproto.repo.importRepo";

/** The one media type com.atproto.repo.importRepo's lexicon names for its input. */
const CAR_TYPE = "application/vnd.ipld.car";

/**
 * Moving an account here from another PDS (docs/decisions/0055; the reference's documented migration). These methods
 * answer a deactivated account's session too (xrpc/router.ts, METHODS_OF_A_MOVE): an account being moved here is
 * deactivated until the person activates it.
 */
export const movingInMethods: XrpcMethods = {
  /**
   * The repository exported by the old PDS, as a CAR streamed in (never past ATRIUM_IMPORT_MAX_BYTES), verified and
   * taken in all at once or not at all (repo/repo-import.ts). The account's own password session only: replacing a
   * whole repository is account management, which no OAuth token does here.
   */
  [IMPORT_REPO]: {
    type: "procedure",
    auth: "required",
    input: "stream",
    handler: async ({ services, caller, request }, body) => {
      caller.requireAccountManagement(IMPORT_REPO);
      const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== CAR_TYPE) throw invalidRequest(`Content-Type must be ${CAR_TYPE}: the body is the repository's CAR file (com.atproto.sync.getRepo's answer)`);
      await services.repoImporter.import(caller.did, body);
      return {};
    },
  },
};
