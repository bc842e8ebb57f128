import cluster from "node:cluster";
import { createLogger } from "../../server/logger.ts";

/**
 * A process that writes log lines through the server's logger (server/logger.ts) and then ends as told, for
 * tests/integration/log-output.test.ts: `node --import tsx tests/helpers/log-writer.ts <ending> <lines>`.
 * - crash: an uncaught exception once the lines are logged (they are still in the logger's buffer);
 * - exit: process.exit(0), as the server's graceful stop ends;
 * - workers: two cluster workers, each logging the lines at once into the standard output they share.
 */
const [ending = "exit", count = "10"] = process.argv.slice(2);
const lines = Number(count);

if (ending === "workers" && cluster.isPrimary) {
  for (let worker = 0; worker < 2; worker++) cluster.fork();
} else {
  const log = createLogger("info");
  const writer = cluster.isWorker ? cluster.worker!.id : 0;
  // Long lines, so that a few make a write larger than a pipe writes atomically.
  for (let n = 0; n < lines; n++) log.info({ writer, n, padding: "x".repeat(300) }, "line");
  if (ending === "crash") {
    setTimeout(() => {
      throw new Error("a crash after logging");
    }, 1);
  } else {
    setTimeout(() => process.exit(0), 1);
  }
}
