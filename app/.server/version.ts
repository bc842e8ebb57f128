import { version } from "../../package.json";

/** This server's version, from package.json: `GET /xrpc/_health` answers it. */
export const SERVER_VERSION: string = version;
