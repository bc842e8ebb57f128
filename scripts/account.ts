import { parseArgs } from "node:util";
import { AccountError, AccountManager } from "../app/.server/accounts/account-manager.ts";
import { ConfigError, loadConfig } from "../app/.server/config.ts";
import { openDatabase } from "../app/.server/db/index.ts";
import { applyMigrations } from "../app/.server/db/migrations.ts";
import { repositories } from "../app/.server/services.ts";
import { SqlAccountStore } from "../app/.server/stores/sql-account-store.ts";

/**
 * Account administration on the command line:
 *   npm run account -- create --handle alice.test --email alice@example.com --password '…' [--did did:plc:…]
 *   npm run account -- list
 *   npm run account -- set-password --handle alice.test --password '…'
 *   npm run account -- delete --handle alice.test
 * Each success prints one JSON line; failures print a message to stderr and exit 1.
 */

const USAGE = `Usage:
  npm run account -- create --handle <handle> --email <email> --password <password> [--did <did>]
  npm run account -- list
  npm run account -- set-password (--handle <handle> | --email <email> | --did <did>) --password <password>
  npm run account -- delete (--handle <handle> | --email <email> | --did <did>)`;

function identifierOf(values: { handle?: string; email?: string; did?: string }): string {
  const identifier = values.handle ?? values.email ?? values.did;
  if (!identifier) throw new AccountError("usage", "name the account with --handle, --email or --did");
  return identifier;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new AccountError("usage", `${flag} is required`);
  return value;
}

async function run(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      handle: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      did: { type: "string" },
    },
    strict: true,
  });
  const config = loadConfig();
  await applyMigrations(config.database);
  const db = openDatabase(config.database);
  try {
    await runCommand(command, values, new AccountManager(new SqlAccountStore(db), Date.now, repositories(config, db, Date.now).repoWriter));
  } finally {
    await db.close();
  }
}

async function runCommand(command: string | undefined, values: { handle?: string; email?: string; password?: string; did?: string }, accounts: AccountManager): Promise<void> {
  switch (command) {
    case "create": {
      const account = await accounts.create({
        handle: required(values.handle, "--handle"),
        email: required(values.email, "--email"),
        password: required(values.password, "--password"),
        did: values.did,
      });
      console.log(JSON.stringify({ did: account.did, handle: account.handle }));
      return;
    }
    case "list":
      for (const account of await accounts.list()) {
        console.log(JSON.stringify({ did: account.did, handle: account.handle, email: account.email, createdAt: account.createdAt.toISOString() }));
      }
      return;
    case "set-password": {
      const account = await accounts.setPassword(identifierOf(values), required(values.password, "--password"));
      console.log(JSON.stringify({ did: account.did, handle: account.handle, passwordChanged: true }));
      return;
    }
    case "delete": {
      const account = await accounts.delete(identifierOf(values));
      console.log(JSON.stringify({ did: account.did, handle: account.handle, deleted: true }));
      return;
    }
    default:
      throw new AccountError("usage", command ? `unknown command ${command}\n${USAGE}` : USAGE);
  }
}

try {
  await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof AccountError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    console.error(`error: ${(error as Error).message}`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
