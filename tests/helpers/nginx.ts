import { spawn } from "node:child_process";
import { accessSync, chmodSync, constants, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { holdFreePort, type HeldPort } from "../../scripts/lib/server-process.ts";
import { startTestServer, type TestServer } from "./test-server.ts";

export { holdFreePort };

/**
 * A real nginx in front of Atrium, configured as docs/configuration.md "Behind a reverse
 * proxy" says: it appends the peer it saw to X-Forwarded-For
 * ($proxy_add_x_forwarded_for), passes WebSocket upgrades on (the
 * firehose) and balances round-robin over its upstreams.
 * Tests that attack through it see what a deployment sees.
 *
 * nginx runs in the foreground (`daemon off`) as a child of the test, with
 * everything it writes (pid, temp folders) in a fresh folder given as its
 * prefix (-p), and its start-up errors on stderr (-e: the compiled-in error
 * log path is not writable for every user). Run as root, its master process
 * starts workers as `nobody`, which create their temp files in folders the
 * master made for them inside that folder: the folder must let them through
 * (0711). Run as another user, nothing switches user, and a `user` directive
 * would only be warned about, so none is written.
 */

const NGINX_BINARY = "/usr/sbin/nginx";

export type Nginx = {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  pid: number;
  /** What nginx printed (warnings and errors). */
  output(): string;
  /** Stops nginx by its PID and removes its folder. */
  stop(): Promise<void>;
};

function assertInstalled(): void {
  try {
    accessSync(NGINX_BINARY, constants.X_OK);
  } catch {
    throw new Error(
      `nginx is not installed (${NGINX_BINARY} is missing): the reverse-proxy tests run Atrium behind a real nginx. ` +
        "Install Debian's package with `apt-get install -y nginx-light` (.ci/run does this when it is missing).",
    );
  }
}

/** A certificate and its key (PEM files) for nginx to serve https with. */
export type NginxTls = { certificateFile: string; keyFile: string };

function nginxConfig(dir: string, port: number, upstreamPorts: number[], tls?: NginxTls): string {
  const servers = upstreamPorts.map((upstream) => `    server 127.0.0.1:${upstream};`).join("\n");
  return `daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 20m;
  map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      close;
  }
  upstream atrium {
${servers}
  }
  server {
    listen 127.0.0.1:${port}${tls ? ` ssl;
    ssl_certificate ${tls.certificateFile};
    ssl_certificate_key ${tls.keyFile}` : ""};
    location / {
      proxy_pass http://atrium;
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
    }
  }
}
`;
}

/**
 * Starts nginx on `port` (a held one, released just before nginx binds it; a free one by default) in front of Atrium
 * processes on `upstreamPorts`, and waits until nginx itself listens there. With `tls`, it serves https (TLS terminated
 * at nginx, as in a deployment).
 */
export async function startNginx(options: { upstreamPorts: number[]; port?: HeldPort; tls?: NginxTls }): Promise<Nginx> {
  assertInstalled();
  const held = options.port ?? (await holdFreePort());
  const port = held.port;
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-nginx-"));
  if (process.getuid?.() === 0) chmodSync(dir, 0o711);
  const configPath = path.join(dir, "nginx.conf");
  writeFileSync(configPath, nginxConfig(dir, port, options.upstreamPorts, options.tls));

  await held.release();
  const child = spawn(NGINX_BINARY, ["-p", dir, "-c", configPath, "-e", "stderr"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const remove = () => rmSync(dir, { recursive: true, force: true });

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, "SIGTERM");
      const killer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, "SIGKILL"), 5000);
      await exited;
      clearTimeout(killer);
    }
    remove();
  };

  try {
    await waitUntilListening(port, path.join(dir, "nginx.pid"), exited, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`, port, pid: child.pid!, output: () => output, stop };
}

/**
 * Until nginx listens on `port`. That the port accepts connections is not enough: another process may hold it. nginx
 * writes its pid file only once it has bound its listening sockets (a failed bind ends it first), so the file's
 * presence says the listener is nginx.
 */
async function waitUntilListening(port: number, pidFile: string, exited: Promise<void>, output: () => string): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (gone) throw new Error(`nginx exited before listening:\n${output()}`);
    if (existsSync(pidFile) && (await accepts(port))) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nginx did not listen on 127.0.0.1:${port} in time:\n${output()}`);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export type ProxiedServers = {
  /** The public origin: nginx's address, which every Atrium process also has as its issuer (PUBLIC_URL). */
  issuer: string;
  nginx: Nginx;
  servers: TestServer[];
  stop(): Promise<void>;
};

/**
 * `count` Atrium processes sharing one SQLite file behind one nginx
 * (round-robin), all with nginx's origin as their issuer, as a deployment
 * with several processes runs them.
 */
export async function startBehindNginx(count: number, env: Record<string, string>): Promise<ProxiedServers> {
  // Held until nginx binds it: a port let go at once was once handed to one of the Atrium processes started below, and
  // the tests then talked to that process directly, X-Forwarded-For and all (14 forged PARs admitted under a limit of 3).
  const port = await holdFreePort();
  const issuer = `http://127.0.0.1:${port.port}`;
  const servers: TestServer[] = [];
  const stopAll = async (nginx?: Nginx) => {
    await nginx?.stop();
    await port.release();
    for (const server of servers.reverse()) await server.stop();
  };
  try {
    servers.push(await startTestServer({ ...env, PUBLIC_URL: issuer }));
    const shared = { ...env, PUBLIC_URL: issuer, DATABASE_URL: servers[0]!.databaseUrl };
    while (servers.length < count) servers.push(await startTestServer(shared));
    const nginx = await startNginx({ port, upstreamPorts: servers.map((server) => server.port) });
    return { issuer, nginx, servers, stop: () => stopAll(nginx) };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
