import { P256Keypair, verifySignature } from "@atproto/crypto";
import { concatBytesAsync, getFullRepo, MemoryBlockstore, Repo, verifyCommitSig, verifyRepoCar, WriteOpAction } from "@atproto/repo";
import { describe, expect, it } from "vitest";

/**
 * @atproto/repo 0.10.14 and @atproto/crypto 0.5.5 declare Node 22 but run on Node 20, which this server supports
 * (docs/decisions/0027). This imports and exercises what Atrium uses of them, so that an upgrade that no longer runs
 * on Node 20 fails here rather than in production.
 */
describe(`@atproto/repo and @atproto/crypto on Node ${process.versions.node}`, () => {
  it("run on this Node: a signed repository is built, written, exported and verified", async () => {
    const keypair = await P256Keypair.create({ exportable: true });
    const did = "did:plc:librarycheck";
    const storage = new MemoryBlockstore();
    let repo = await Repo.create(storage, did, keypair);
    const record = { $type: "app.bsky.feed.post", text: "on node 20", createdAt: "2026-11-26T00:00:00.000Z" };
    repo = await repo.applyWrites([{ action: WriteOpAction.Create, collection: "app.bsky.feed.post", rkey: "3kaaaaaaaaaa2", record }], keypair);
    expect(await verifyCommitSig(repo.commit, keypair.did())).toBe(true);
    const car = await concatBytesAsync(getFullRepo(storage, repo.cid));
    const verified = await verifyRepoCar(car, did, keypair.did());
    expect(verified.creates.map((op) => op.rkey)).toEqual(["3kaaaaaaaaaa2"]);
  });

  it("sign with low-S signatures, which atproto requires and verifySignature insists on", async () => {
    const keypair = await P256Keypair.create();
    const data = new TextEncoder().encode("atrium");
    for (let i = 0; i < 20; i++) {
      const signature = await keypair.sign(data);
      expect(await verifySignature(keypair.did(), data, signature)).toBe(true);
    }
  });
});
