import pino, { type DestinationStream, type Logger as PinoLogger } from "pino";
import type { LogLevel } from "../app/.server/config.ts";
import { REDACTED, REDACTED_PATHS, serializeError } from "../app/.server/observability/redaction.ts";

/**
 * Lines wait in memory until this many bytes are ready (or LOG_FLUSH_MS passed), then go out in one write
 * (docs/decisions/0035): one write per request line costs more CPU than the rest of the line's work.
 */
export const LOG_BUFFER_BYTES = 2048;
/**
 * No write is larger than this: on Linux a pipe write of at most PIPE_BUF (4096) bytes is atomic, so lines of several
 * processes sharing one standard output (ATRIUM_WORKERS, docs/decisions/0021) never interleave mid-line.
 */
export const LOG_MAX_WRITE_BYTES = 4096;
/** Buffered lines are written at least this often (ms), however few. */
export const LOG_FLUSH_MS = 100;

/**
 * The server's one logger (docs/decisions/0014): pino, one JSON object per
 * line on standard output, created by the entry from ATRIUM_LOG_LEVEL and
 * handed to what logs (the services, the two request handlers). `level` is
 * written as its name ("info"). Secrets are kept out twice over
 * (app/.server/observability/redaction.ts): pino's `redact` censors the
 * fields that hold them, and errors are serialized as type, message, stack,
 * code and cause only, with anything shaped like a token, code, request_uri,
 * proof or Authorization value masked.
 *
 * Standard output is written in batches (`standardOutput`).
 */
export function createLogger(level: LogLevel, destination: DestinationStream = standardOutput()): PinoLogger {
  const options = {
    level,
    redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
    serializers: { err: serializeError },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return pino(options, destination);
}

/**
 * Standard output as the logger writes it (docs/decisions/0035): LOG_BUFFER_BYTES at a time or every LOG_FLUSH_MS, each
 * write whole lines and at most LOG_MAX_WRITE_BYTES, written synchronously. Not asynchronously: a batch whose
 * asynchronous write met a full pipe waits for a retry timer that a process.exit never reaches, and the exit flush
 * skips a batch in flight, so a graceful stop lost lines (0035's amendment). What is still buffered when the process
 * ends is written on its way out, on the process's `exit` (a graceful stop's process.exit, a crash by an uncaught
 * exception): pino registers only asynchronous destinations for that, so this module does. Only a process killed
 * outright (SIGKILL, the out-of-memory killer) loses its last LOG_FLUSH_MS of lines.
 */
export function standardOutput(): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: true, minLength: LOG_BUFFER_BYTES, maxWrite: LOG_MAX_WRITE_BYTES, periodicFlush: LOG_FLUSH_MS });
  flushedOnExit.add(destination);
  if (flushedOnExit.size === 1) process.once("exit", flushAllOnExit);
  return destination;
}

/** Every standard-output destination made in this process; one `exit` listener writes what each still holds. */
const flushedOnExit = new Set<ReturnType<typeof pino.destination>>();

function flushAllOnExit(): void {
  for (const destination of flushedOnExit) {
    try {
      destination.flushSync();
    } catch {
      // Standard output is closed (EPIPE): the lines have nowhere to go, and the process is ending anyway.
    }
  }
}
