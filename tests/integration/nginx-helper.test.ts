import net from "node:net";
import { describe, expect, it } from "vitest";
import { holdFreePort, startNginx } from "../helpers/nginx.ts";

/**
 * The reverse-proxy tests are only as good as their proxy: a test that believes it talks through nginx while it talks
 * to whatever else holds the port proves nothing (trusted-proxy.test.ts once saw 14 forged PARs admitted under a limit
 * of 3: an Atrium process had been handed the port chosen for nginx, and answered in its place).
 */
describe("the nginx test helper", () => {
  it("does not take another process's listener on its port for nginx: it reports that nginx could not listen", async () => {
    const squatter = net.createServer((socket) => socket.end());
    const port = await new Promise<number>((resolve) => squatter.listen(0, "127.0.0.1", () => resolve((squatter.address() as net.AddressInfo).port)));
    try {
      const notHeld = { port, release: async () => undefined };
      await expect(startNginx({ upstreamPorts: [1], port: notHeld })).rejects.toThrow(/nginx exited before listening[\s\S]*Address already in use/);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it("keeps a held port from every other taker until nginx binds it", async () => {
    const held = await holdFreePort();
    const others = await Promise.all(Array.from({ length: 200 }, () => holdFreePort()));
    expect(others.map((other) => other.port)).not.toContain(held.port);
    await Promise.all(others.map((other) => other.release()));
    const nginx = await startNginx({ upstreamPorts: [1], port: held });
    expect(nginx.port).toBe(held.port);
    await nginx.stop();
  });
});
