import { cidForCbor } from "@atproto/common";
import { P256Keypair, Secp256k1Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { describe, expect, it } from "vitest";
import { atprotoOperation, didOfGenesis, operationCid, signOperation } from "./plc-operation.ts";

/** The operations Atrium writes, checked with the reference's own code (@did-plc/lib), not with Atrium's. */
describe("did:plc operations", () => {
  it("a genesis operation is valid for its DID, as @did-plc/lib derives and checks it", async () => {
    const rotation = await Secp256k1Keypair.create();
    const signing = await P256Keypair.create();
    const identity = { handle: "alice.example.com", signingKey: signing.did(), pdsEndpoint: "https://pds.example.com", rotationKeys: [rotation.did()] };
    const genesis = await signOperation(atprotoOperation(identity, null), rotation);
    const did = await didOfGenesis(genesis);
    expect(did).toBe(await plc.didForCreateOp(genesis));
    const data = await plc.assureValidCreationOp(did, genesis);
    expect(data).toMatchObject({
      rotationKeys: [rotation.did()],
      verificationMethods: { atproto: signing.did() },
      alsoKnownAs: ["at://alice.example.com"],
      services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://pds.example.com" } },
    });
    // Exactly what @did-plc/lib's own builder writes for the same inputs (same field order: same bytes, same DID).
    const reference = await plc.atprotoOp({ handle: identity.handle, pds: identity.pdsEndpoint, rotationKeys: identity.rotationKeys, prev: null, signer: rotation, signingKey: signing.did() });
    expect(await plc.didForCreateOp(reference)).toBe(did);
  });

  it("a signature by a key that is not a rotation key is refused by @did-plc/lib", async () => {
    const rotation = await Secp256k1Keypair.create();
    const other = await Secp256k1Keypair.create();
    const identity = { handle: "bob.example.com", signingKey: (await P256Keypair.create()).did(), pdsEndpoint: "https://pds.example.com", rotationKeys: [rotation.did()] };
    const forged = await signOperation(atprotoOperation(identity, null), other);
    await expect(plc.assureValidCreationOp(await didOfGenesis(forged), forged)).rejects.toThrow();
  });

  it("the CID that chains the next operation is the reference's", async () => {
    const rotation = await Secp256k1Keypair.create();
    const identity = { handle: "carol.example.com", signingKey: (await P256Keypair.create()).did(), pdsEndpoint: "https://pds.example.com", rotationKeys: [rotation.did()] };
    const genesis = await signOperation(atprotoOperation(identity, null), rotation);
    expect(await operationCid(genesis)).toBe((await cidForCbor(genesis)).toString());
    const update = await signOperation(atprotoOperation({ ...identity, handle: "carol2.example.com" }, await operationCid(genesis)), rotation);
    expect(await plc.assureValidSig([rotation.did()], update)).toBe(rotation.did());
  });
});
