import type { LexiconPermissionSet } from "@atproto/oauth-scopes";

/**
 * Resolves `include:<nsid>` permission sets (atproto permission-set lexicons)
 * at authorization time. Two implementations: a directory of lexicon
 * documents (offline and private deployments) and the atproto network
 * resolver (DNS `_lexicon` TXT → DID → PDS → com.atproto.sync.getRecord).
 */
export interface PermissionSetResolver {
  /** The `main` permission-set definition of the lexicon `nsid`; throws PermissionSetResolutionError when it cannot be had. */
  resolve(nsid: string): Promise<LexiconPermissionSet>;
}

export class PermissionSetResolutionError extends Error {
  constructor(
    readonly nsid: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "PermissionSetResolutionError";
  }
}
