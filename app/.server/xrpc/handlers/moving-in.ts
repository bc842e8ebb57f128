import { z } from "zod";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest } from "../xrpc-error.ts";

const IMPORT_REPO = "com.atproto.repo.importRepo";
const ACTIVATE_ACCOUNT = "com.atproto.server.activateAccount";

/** listMissingBlobs' parameters, as its lexicon bounds them. */
const missingBlobsParams = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(500),
  cursor: z.string().max(512).optional(),
});

/** The one media type com.atproto.repo.importRepo's lexicon names for its input. */
const CAR_TYPE = "application/vnd.ipld.car";

/**
 * Moving an account here from another PDS (docs/decisions/0055; the reference's documented migration). These methods
 * answer a deactivated account's session too (xrpc/router.ts, STEPS_OF_A_MOVE): an account being moved here is
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

  /** Referenced blobs not stored here, a page at a time in CID order (the reference's listMissingBlobs). Any session of the account. */
  "com.atproto.repo.listMissingBlobs": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller, params }) => services.movingIn.missingBlobs(caller.did, missingBlobsParams.parse(Object.fromEntries(params))),
  },

  /** How far the move has come: the repository, its records and blobs, whether the DID points here. Any session of the account. */
  "com.atproto.server.checkAccountStatus": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => services.movingIn.status(caller.did),
  },

  /**
   * The last step: the account answers and the firehose announces it (#account, #identity, #sync), once its DID
   * document names this server. The account's own password session only, as the reference allows; the account page
   * reactivates too (docs/decisions/0031).
   */
  [ACTIVATE_ACCOUNT]: {
    type: "procedure",
    auth: "required",
    input: "none",
    handler: async ({ services, caller }) => {
      caller.requireAccountManagement(ACTIVATE_ACCOUNT);
      await services.movingIn.activate(caller.did);
      return {};
    },
  },
};
