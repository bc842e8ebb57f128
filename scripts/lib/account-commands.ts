import { parseArgs } from "node:util";
import { AccountError, AccountManager } from "../../app/.server/accounts/account-manager.ts";
import { HandleRules } from "../../app/.server/accounts/handle-rules.ts";
import { setTestPasswordCost } from "../../app/.server/accounts/password.ts";
import { AccountDeletion, AccountDeletionError } from "../../app/.server/accounts/account-deletion.ts";
import { MAX_CODE_GUESSES, TypedCodes, typedCodeKey } from "../../app/.server/accounts/typed-codes.ts";
import { ConfigError, loadConfig, type Config } from "../../app/.server/config.ts";
import type { Database } from "../../app/.server/db/sql.ts";
import type { PlcIdentity } from "../../app/.server/identity/plc-identity.ts";
import { SqlSecretStore } from "../../app/.server/stores/secrets.ts";
import { SqlSigningKeyStore } from "../../app/.server/stores/sql-signing-key-store.ts";
import { resealUnderCurrentKey } from "../../app/.server/accounts/signing-key-setup.ts";
import type { SigningKeys } from "../../app/.server/accounts/signing-key.ts";
import { SqlAccountDeletionStore } from "../../app/.server/stores/sql-account-deletion-store.ts";
import { SqlTypedCodeStore } from "../../app/.server/stores/sql-typed-code-store.ts";
import { SqlAttemptStore } from "../../app/.server/stores/sql-attempt-store.ts";
import { SignInThrottle } from "../../app/.server/security/sign-in-throttle.ts";
import { openDatabase } from "../../app/.server/db/index.ts";
import { applyMigrations } from "../../app/.server/db/migrations.ts";
import { IdentityError } from "../../app/.server/identity/identity-error.ts";
import { accountSigningKeys, blobStorage, plcIdentity, repositories } from "../../app/.server/services.ts";
import { SqlAccountStore } from "../../app/.server/stores/sql-account-store.ts";

/**
 * The account command line tool's commands (scripts/account.ts is the tool: it prints what they print and turns their
 * refusals into an exit status). The tests run them in their own process (tests/helpers/test-server.ts:
 * createAccount) rather than starting a Node process per account (docs/decisions/0036, amendment).
 *
 * Account administration on the command line:
 *   npm run account -- create --handle alice.test --email alice@example.com --password '…' [--recovery-key did:key:…]
 *   npm run account -- register --handle alice.test [--new-did]
 *   npm run account -- list
 *   npm run account -- set-password --handle alice.test --password '…'
 *   npm run account -- delete --handle alice.test [--tombstone]
 *   npm run account -- rotate-key-encryption
 * `create` registers the account's did:plc at ATRIUM_PLC_DIRECTORY_URL before it stores the account and prints it;
 * `register` deals with an account made before DIDs were registered (docs/decisions/0028a-plc-identity.md);
 * `delete` leaves the DID as it is unless told to tombstone it, which only a DID whose one rotation key is this
 * server's may be (docs/decisions/0050); `rotate-key-encryption` seals every account's signing key under
 * ATRIUM_KEY_ENCRYPTION_KEY, opening those of ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS. The commands open the signing
 * keys with the server's settings, and seal at start what the server would (accounts/signing-key-setup.ts).
 * Each success prints one JSON line; failures print a message to stderr and exit 1.
 */

const USAGE = `Usage:
  npm run account -- create --handle <handle> --email <email> --password <password> [--recovery-key <did:key>]
  npm run account -- register (--handle <handle> | --email <email> | --did <did>) [--new-did]
  npm run account -- list
  npm run account -- set-password (--handle <handle> | --email <email> | --did <did>) --password <password>
  npm run account -- delete (--handle <handle> | --email <email> | --did <did>) [--tombstone]
  npm run account -- rotate-key-encryption`;

function identifierOf(values: { handle?: string; email?: string; did?: string }): string {
  const identifier = values.handle ?? values.email ?? values.did;
  if (!identifier) throw new AccountError("usage", "name the account with --handle, --email or --did");
  return identifier;
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new AccountError("usage", `${flag} is required`);
  return value;
}

/** A refusal the tool reports as `error: <message>` and exit status 1, rather than a crash. */
export function isCommandRefusal(error: unknown): error is Error {
  return (
    error instanceof AccountError ||
    error instanceof AccountDeletionError ||
    error instanceof IdentityError ||
    error instanceof ConfigError ||
    (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS") === true
  );
}

/** Runs one command (`argv`: what follows `npm run account --`) with the settings in `env`; each line of its result goes to `print`. */
export async function runAccountCommand(argv: string[], options: { env?: Readonly<Record<string, string | undefined>>; print: (line: string) => void }): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      handle: { type: "string" },
      email: { type: "string" },
      password: { type: "string" },
      did: { type: "string" },
      "new-did": { type: "boolean" },
      "recovery-key": { type: "string" },
      tombstone: { type: "boolean" },
    },
    strict: true,
  });
  const config = loadConfig(options.env);
  return withPasswordCost(config.testFastPasswordHashes, () => runWith(config, command, values, options.print));
}

/**
 * The tests' accounts (docs/decisions/0036; refused by loadConfig for a production issuer) are hashed at the test
 * cost while a command runs, and the process's cost is the production one again once the last has ended: run in the
 * tests' own process, several commands at once, a process-wide setting must not outlive them.
 */
let fastHashCommands = 0;
async function withPasswordCost<T>(fast: boolean, body: () => Promise<T>): Promise<T> {
  if (!fast) return body();
  if (fastHashCommands++ === 0) setTestPasswordCost();
  try {
    return await body();
  } finally {
    if (--fastHashCommands === 0) setTestPasswordCost(false);
  }
}

async function runWith(config: Config, command: string | undefined, values: Values, print: (line: string) => void): Promise<void> {
  await applyMigrations(config.database);
  const db = openDatabase(config.database);
  try {
    const signingKeys = await accountSigningKeys(config, db, Date.now());
    if (command === "rotate-key-encryption") return print(JSON.stringify(await rotateKeyEncryption(db, signingKeys)));
    const { repoWriter } = repositories(config, db, signingKeys, Date.now);
    const identity = await plcIdentity(config, db, Date.now());
    const manager = new AccountManager(new SqlAccountStore(db), identity, { handles: new HandleRules(config.userDomains), signingKeys, repositories: repoWriter });
    await runCommand(command, values, manager, operatorDeletion(config, db, manager, identity), print);
  } finally {
    await db.close();
  }
}

/**
 * `rotate-key-encryption` (docs/decisions/0050): what the earlier keys sealed, sealed again under the current one.
 * `remaining` counts the accounts whose keys are still under another key (another process sealing them at the same
 * time); at 0, ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS can be emptied.
 */
async function rotateKeyEncryption(db: Database, signingKeys: SigningKeys) {
  const { resealed, remaining } = await resealUnderCurrentKey(new SqlSigningKeyStore(db), signingKeys);
  return { keyId: signingKeys.ring.current.id, resealed: resealed.reduce((sum, { accounts }) => sum + accounts, 0), from: resealed, remaining };
}

/**
 * The operator's deletion (docs/decisions/0030, 0050): the account's rows and its #account event in one transaction,
 * its DID tombstoned first only when asked, then its blobs' bytes (docs/decisions/0043). No email and no typed code:
 * the operator at the command line is trusted.
 */
function operatorDeletion(config: Config, db: Database, accounts: AccountManager, identity: PlcIdentity): () => Promise<AccountDeletion> {
  return async () => {
    const cookieSecret = config.cookieSecret ?? (await new SqlSecretStore(db).loadOrCreate("cookie", Date.now()));
    const codes = new TypedCodes(new SqlTypedCodeStore(db), typedCodeKey(cookieSecret), { lifetimeMs: config.lifetimes.typedCode, maxGuesses: MAX_CODE_GUESSES, now: Date.now });
    const store = new SqlAccountDeletionStore(db, config.firehose.backfillMs);
    const unused = () => ({ subject: "", text: "" });
    // The operator requests no code: the throttle is never asked.
    const throttle = new SignInThrottle(new SqlAttemptStore(db), undefined, Date.now, "deletion");
    // A blob copy the sweep could not delete is said, and left to the server's next sweeps.
    const { blobs } = blobStorage(config, db, Date.now, (message, error) => console.error(`warning: ${message}: ${error instanceof Error ? error.message : String(error)}`));
    return new AccountDeletion(accounts, codes, store, identity, undefined, throttle, {
      serviceName: config.brand.serviceName,
      email: unused,
      onDeleted: () => {},
      sweepBlobs: () => blobs.sweepAll(),
      now: Date.now,
    });
  };
}

type Values = { handle?: string; email?: string; password?: string; did?: string; "new-did"?: boolean; "recovery-key"?: string; tombstone?: boolean };

async function runCommand(command: string | undefined, values: Values, accounts: AccountManager, deletion: () => Promise<AccountDeletion>, print: (line: string) => void): Promise<void> {
  switch (command) {
    case "create": {
      if (values.did !== undefined) throw new AccountError("usage", "--did is not taken by create: the DID is derived from the account's registration at the PLC directory");
      const account = await accounts.create({
        handle: required(values.handle, "--handle"),
        email: required(values.email, "--email"),
        password: required(values.password, "--password"),
        recoveryKey: values["recovery-key"],
      });
      print(JSON.stringify({ did: account.did, handle: account.handle }));
      return;
    }
    case "register": {
      const { account, previousDid } = await accounts.register(identifierOf(values), { newDid: values["new-did"] === true });
      print(JSON.stringify({ did: account.did, handle: account.handle, registered: true, ...(previousDid ? { previousDid } : { unchanged: true }) }));
      return;
    }
    case "list":
      for (const account of await accounts.list()) {
        print(JSON.stringify({ did: account.did, handle: account.handle, email: account.email, createdAt: account.createdAt.toISOString() }));
      }
      return;
    case "set-password": {
      const account = await accounts.setPassword(identifierOf(values), required(values.password, "--password"));
      print(JSON.stringify({ did: account.did, handle: account.handle, passwordChanged: true }));
      return;
    }
    case "delete": {
      const tombstone = values.tombstone === true;
      const account = await (await deletion()).deleteByOperator(identifierOf(values), { tombstone });
      print(JSON.stringify({ did: account.did, handle: account.handle, deleted: true, ...(tombstone ? { tombstoned: true } : {}) }));
      return;
    }
    default:
      throw new AccountError("usage", command ? `unknown command ${command}\n${USAGE}` : USAGE);
  }
}
