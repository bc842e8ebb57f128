import { startPlcDirectory } from "./lib/plc-directory.ts";

/**
 * A development PLC directory on loopback, for trying Atrium offline (README.md, "See it work in two minutes"):
 *   npm run plc              # http://127.0.0.1:2582
 *   PLC_PORT=2600 npm run plc
 * It keeps everything in memory: the DIDs registered at it exist nowhere else and are gone when it stops. Point
 * the server and the account CLI at it with ATRIUM_PLC_DIRECTORY_URL.
 */
const DEFAULT_PORT = 2582;

const port = process.env.PLC_PORT ? Number(process.env.PLC_PORT) : DEFAULT_PORT;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`error: PLC_PORT must be a port number (got ${JSON.stringify(process.env.PLC_PORT)})`);
  process.exit(1);
}
const directory = await startPlcDirectory(port);
console.log(`A development PLC directory (in memory) listens at ${directory.url}`);
console.log(`Use it with: export ATRIUM_PLC_DIRECTORY_URL=${directory.url}`);
const stop = () => void directory.stop().then(() => process.exit(0));
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
