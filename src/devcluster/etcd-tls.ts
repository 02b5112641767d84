// The TLS material of a local etcd (certificates.ts): a CA of its own, a certificate for its client
// and peer ports (127.0.0.1 and localhost), and the one client certificate it accepts, kube-apiserver's.
// With it etcd requires a client certificate signed by that CA on both ports, so that another user of
// the machine, who can connect to 127.0.0.1 but cannot read the scratch directory (0700), cannot read
// or write what the apiserver stores (Secrets among it).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { issueCertificate, type PemPair } from "./certificates.ts";

/** What a client presents to the etcd: its CA, to verify the server, and its certificate and key. */
export interface EtcdClientTls {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly caPem: string;
  readonly client: PemPair;
}

export interface EtcdTls extends EtcdClientTls {
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
}

/** Makes the CA and both certificates and writes them into `dir` (keys 0600). */
export const writeEtcdTls = (dir: string): EtcdTls => {
  const ca = issueCertificate({
    subject: "opstask local etcd CA",
    issuer: undefined,
    ca: true,
    usages: [],
    names: [],
  });
  // serverAuth and clientAuth: the same certificate serves the peer port and dials it, and etcd's own
  // gRPC gateway dials the client port with it.
  const server = issueCertificate({
    subject: "etcd",
    issuer: ca,
    ca: false,
    usages: ["serverAuth", "clientAuth"],
    names: ["localhost", "127.0.0.1"],
  });
  const client = issueCertificate({
    subject: "kube-apiserver-etcd-client",
    issuer: ca,
    ca: false,
    usages: ["clientAuth"],
    names: [],
  });
  const write = (name: string, text: string, mode: number): string => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    return path;
  };
  return {
    caFile: write("ca.crt", ca.certPem, 0o644),
    serverCertFile: write("server.crt", server.certPem, 0o644),
    serverKeyFile: write("server.key", server.keyPem, 0o600),
    certFile: write("client.crt", client.certPem, 0o644),
    keyFile: write("client.key", client.keyPem, 0o600),
    caPem: ca.certPem,
    client: { certPem: client.certPem, keyPem: client.keyPem },
  };
};

/** etcd's flags for `tls`: client certificates required on the client and the peer port. */
export const etcdTlsArgs = (tls: EtcdTls): string[] => [
  `--cert-file=${tls.serverCertFile}`,
  `--key-file=${tls.serverKeyFile}`,
  "--client-cert-auth=true",
  `--trusted-ca-file=${tls.caFile}`,
  `--peer-cert-file=${tls.serverCertFile}`,
  `--peer-key-file=${tls.serverKeyFile}`,
  "--peer-client-cert-auth=true",
  `--peer-trusted-ca-file=${tls.caFile}`,
];
