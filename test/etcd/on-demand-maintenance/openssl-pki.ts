/**
 * A mutual-TLS PKI made with the `openssl` CLI, for an etcd with `--client-cert-auth` as druid runs it:
 * a CA, a server certificate allowing serverAuth and clientAuth (etcd's own gateway dials etcd with it)
 * and a client certificate. The in-process test PKI (../support/pki.ts) issues serverAuth only, which
 * Go refuses as a client certificate. `openssl` is part of every Debian machine here.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PemPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface MutualTlsPki {
  readonly ca: PemPair;
  readonly server: PemPair;
  readonly client: PemPair;
}

export const makeMutualTlsPki = (serverDnsName: string): MutualTlsPki => {
  const dir = mkdtempSync(join(tmpdir(), "opstask-mtls-"));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  try {
    const key = (name: string) =>
      openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file(name));
    key("ca.key");
    openssl(
      ...["req", "-x509", "-new", "-key", file("ca.key"), "-subj", "/CN=opstask test etcd CA"],
      ...["-days", "1", "-addext", "basicConstraints=critical,CA:TRUE"],
      ...["-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", file("ca.crt")],
    );
    const issue = (name: string, subject: string, extensions: string) => {
      key(`${name}.key`);
      openssl(
        "req",
        "-new",
        "-key",
        file(`${name}.key`),
        "-subj",
        `/CN=${subject}`,
        "-out",
        file(`${name}.csr`),
      );
      writeFileSync(file(`${name}.ext`), extensions);
      openssl(
        ...["x509", "-req", "-in", file(`${name}.csr`), "-CA", file("ca.crt"), "-CAkey", file("ca.key")],
        ...["-CAcreateserial", "-days", "1", "-extfile", file(`${name}.ext`), "-out", file(`${name}.crt`)],
      );
      return {
        certPem: readFileSync(file(`${name}.crt`), "utf8"),
        keyPem: readFileSync(file(`${name}.key`), "utf8"),
      };
    };
    const server = issue(
      "server",
      serverDnsName,
      `subjectAltName=DNS:${serverDnsName},IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n`,
    );
    const client = issue("client", "etcd-client", "extendedKeyUsage=clientAuth\n");
    return {
      ca: { certPem: readFileSync(file("ca.crt"), "utf8"), keyPem: readFileSync(file("ca.key"), "utf8") },
      server,
      client,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
