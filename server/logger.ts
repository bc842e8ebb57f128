import pino, { type DestinationStream, type Logger as PinoLogger } from "pino";
import type { LogLevel } from "../app/.server/config.ts";
import { REDACTED, REDACTED_PATHS, serializeError } from "../app/.server/observability/redaction.ts";

/**
 * The server's one logger (docs/decisions/0014): pino, one JSON object per
 * line on standard output, created by the entry from ATRIUM_LOG_LEVEL and
 * handed to what logs (the services, the two request handlers). `level` is
 * written as its name ("info"). Secrets are kept out twice over
 * (app/.server/observability/redaction.ts): pino's `redact` censors the
 * fields that hold them, and errors are serialized as type, message, stack,
 * code and cause only, with anything shaped like a token, code, request_uri,
 * proof or Authorization value masked.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): PinoLogger {
  const options = {
    level,
    redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
    serializers: { err: serializeError },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}
