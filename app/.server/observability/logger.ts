/**
 * The logger the server is handed (docs/decisions/0014): the entry
 * (server.ts) makes one pino logger from the configuration and passes it to
 * `createServices`; nothing here imports pino. Every call takes fields first
 * and a fixed message second, as pino does, so a pino logger is a Logger.
 * Fields are never request secrets: tokens, codes, cookies, passwords, DPoP
 * proofs, client assertions, Authorization headers and request_uris stay out
 * of logs (the entry's logger also redacts them, see ./redaction.ts).
 */
export interface Logger {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Logs nothing: for scripts and tests that make services without an entry. */
export const SILENT_LOGGER: Logger = {
  error() {},
  warn() {},
  info() {},
  debug() {},
};
