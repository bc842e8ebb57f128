import { BlockMap, blocksToCarFile } from "@atproto/repo";
import { describe, expect, it } from "vitest";
import { carFile } from "./event-bodies.ts";

/** docs/decisions/0037: the #commit event's CAR is written in one pass, byte for byte as @atproto/repo writes it. */
describe("carFile", () => {
  it("writes what blocksToCarFile writes, with blocks of every length prefix size", async () => {
    const blocks = new BlockMap();
    for (const size of [0, 1, 90, 127, 128, 300, 20_000, 70_000]) await blocks.add({ size, fill: "x".repeat(size) });
    const root = blocks.cids()[0]!;
    expect(carFile(root, blocks)).toEqual(await blocksToCarFile(root, blocks));
  });
});
