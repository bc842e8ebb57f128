import type { BlobContentStore } from "../../app/.server/blobs/blob-content.ts";

/** A content store that does what `content` does, except for the operations `overrides` replaces (a fault to inject). */
export function contentStoreWith(content: BlobContentStore, overrides: Partial<Omit<BlobContentStore, "kind">>): BlobContentStore {
  return {
    kind: content.kind,
    create: (key) => content.create(key),
    open: (key) => content.open(key),
    remove: (key) => content.remove(key),
    ...overrides,
  };
}
