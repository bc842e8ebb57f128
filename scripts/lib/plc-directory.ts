import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Database, PlcServer } from "@did-plc/server";

export type RunningPlcDirectory = {
  /** http://127.0.0.1:<port>: what ATRIUM_PLC_DIRECTORY_URL names. */
  url: string;
  stop(): Promise<void>;
};

/**
 * A real PLC directory (@did-plc/server, the reference implementation) with its in-memory database, listening on
 * 127.0.0.1 only: the one the tests register their accounts at (tests/helpers/postgres-global-setup.ts), and
 * `npm run plc` for trying the demo offline. Everything it holds is gone when it stops.
 */
export async function startPlcDirectory(port = 0): Promise<RunningPlcDirectory> {
  const plc = PlcServer.create({ db: Database.mock(), port });
  // PlcServer.start() listens on every interface; the app alone is listened on loopback instead.
  const server: Server = plc.app.listen(port, "127.0.0.1");
  await once(server, "listening");
  const { port: actual } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${actual}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
