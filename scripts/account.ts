import { isCommandRefusal, runAccountCommand } from "./lib/account-commands.ts";

/**
 * Account administration on the command line (the commands and their usage: scripts/lib/account-commands.ts):
 *   npm run account -- create --handle alice.test --email alice@example.com --password '…'
 * Each success prints one JSON line; a refusal prints a message to stderr and exits 1.
 */
try {
  await runAccountCommand(process.argv.slice(2), { print: (line) => console.log(line) });
} catch (error) {
  if (!isCommandRefusal(error)) throw error;
  console.error(`error: ${error.message}`);
  process.exitCode = 1;
}
