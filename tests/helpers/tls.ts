import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * A certificate authority of the test's own and a server certificate it signed for `hosts` (DNS names and IP
 * addresses), made with openssl in a fresh folder: what nginx serves https with (tests/helpers/nginx.ts) and what a
 * client trusts (curl's CURL_CA_BUNDLE, Node's `ca`). Nothing is trusted system-wide.
 */
export type TestCertificates = { caFile: string; certificateFile: string; keyFile: string; remove(): void };

export function makeTestCertificates(hosts: readonly string[]): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-tls-"));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const subjectAltName = hosts.map((host) => (/^[\d.]+$|:/.test(host) ? `IP:${host}` : `DNS:${host}`)).join(",");
  openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=Atrium test CA", "-keyout", file("ca.key"), "-out", file("ca.pem"));
  openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", `/CN=${hosts[0]}`, "-keyout", file("server.key"), "-out", file("server.csr"));
  writeFileSync(file("server.ext"), `subjectAltName=${subjectAltName}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  openssl("x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial", "-days", "2", "-out", file("server.pem"), "-extfile", file("server.ext"));
  return { caFile: file("ca.pem"), certificateFile: file("server.pem"), keyFile: file("server.key"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
