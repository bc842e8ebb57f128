/**
 * The CIDs of the blobs a record references, found anywhere in its JSON.
 *
 * The atproto data model writes a blob as `{"$type": "blob", "ref": {"$link": <cid>}, "mimeType": …, "size": …}`;
 * records written before that form carry the legacy `{"cid": <cid>, "mimeType": …}`. Both count. Matching is
 * deliberately loose (extra keys are fine, the CID string is taken as written): a shape taken for a reference keeps a
 * blob alive and inside the account's quota, while a reference missed would let the blob be deleted under its record.
 *
 * The walk uses an explicit stack, so nesting costs memory, not call stack (the router already refuses bodies nested
 * deeper than 64 levels). The migration 20261123170200_blob_references finds the same two shapes with SQLite's
 * json_tree in records written before it; the two must stay in step (docs/decisions/0008).
 */
export function blobCidsIn(value: unknown): string[] {
  const found = new Set<string>();
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== "object") continue;
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    const object = node as Record<string, unknown>;
    const typed = typedBlobCid(object);
    if (typed !== undefined) found.add(typed);
    const legacy = legacyBlobCid(object);
    if (legacy !== undefined) found.add(legacy);
    for (const child of Object.values(object)) pending.push(child);
  }
  return [...found].sort();
}

/** `{"$type": "blob", "ref": {"$link": <cid>}, …}` */
function typedBlobCid(object: Record<string, unknown>): string | undefined {
  if (object.$type !== "blob") return undefined;
  const ref = object.ref;
  if (ref === null || typeof ref !== "object" || Array.isArray(ref)) return undefined;
  const link = (ref as Record<string, unknown>).$link;
  return typeof link === "string" ? link : undefined;
}

/** `{"cid": <cid>, "mimeType": <type>}`, the form records used before typed blob refs. */
function legacyBlobCid(object: Record<string, unknown>): string | undefined {
  return typeof object.cid === "string" && typeof object.mimeType === "string" ? object.cid : undefined;
}
