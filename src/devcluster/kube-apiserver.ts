// Starting kube-apiserver on 127.0.0.1 against a given etcd: static-token authentication, RBAC,
// a self-generated serving certificate (its CA becomes the kubeconfig's CA), and service-account
// keys generated with node:crypto.
import { generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Deadline, pollUntil } from "./deadline.ts";
import type { EtcdClientTls } from "./etcd-tls.ts";
import { probe } from "./http.ts";
import { freePort } from "./ports.ts";
import { type ManagedProcess, ProcessExitedError, startProcess } from "./process.ts";

/** A user authenticated by a static bearer token. */
export interface TokenUser {
  readonly name: string;
  readonly groups: readonly string[];
}

export interface IssuedToken extends TokenUser {
  readonly token: string;
}

export interface KubeApiserverOptions {
  readonly binary: string;
  readonly etcdUrl: string;
  /** The client certificate etcd requires (etcd-tls.ts). */
  readonly etcdTls?: EtcdClientTls;
  /** Holds pki/, tokens.csv and the service-account keys. */
  readonly dir: string;
  readonly deadline: Deadline;
  /** Besides `admin` (system:masters). */
  readonly users?: readonly TokenUser[];
  readonly extraArgs?: readonly string[];
  /**
   * The address kube-apiserver binds and advertises (default 127.0.0.1). Any other address also
   * gives the `kubernetes` Service endpoints (that address), so that pods reach the apiserver.
   */
  readonly bindAddress?: string;
  /** Admit pods with their ServiceAccount and its API token (needs a controller-manager). */
  readonly serviceAccounts?: boolean;
  readonly scratchDir?: string;
  readonly onLine?: (line: string) => void;
}

export interface RunningKubeApiserver {
  readonly process: ManagedProcess;
  /** https://<bind address>:<port> */
  readonly server: string;
  /** PEM bundle of the self-signed serving certificate and its CA. */
  readonly caPem: string;
  /** Issued tokens by user name; always contains `admin`. */
  readonly tokens: ReadonlyMap<string, IssuedToken>;
  /**
   * Starts kube-apiserver again, on the same port with the same certificates and tokens, once the
   * previous process has ended (fault injection: a restart); resolves once `/readyz` answers 200.
   */
  readonly respawn: (deadline: Deadline) => Promise<ManagedProcess>;
}

export const ADMIN_USER = "admin";
const LOOPBACK = "127.0.0.1";
const PORT_RETRIES = 3;

const csvField = (value: string): string => `"${value.replaceAll('"', '""')}"`;

function writeAuthFiles(dir: string, users: readonly TokenUser[]): Map<string, IssuedToken> {
  const tokens = new Map<string, IssuedToken>();
  for (const user of [{ name: ADMIN_USER, groups: ["system:masters"] }, ...users]) {
    if (tokens.has(user.name)) throw new Error(`duplicate user ${user.name}`);
    if (!/^[A-Za-z0-9:._@-]+$/.test(user.name))
      throw new Error(`invalid user name ${JSON.stringify(user.name)}`);
    tokens.set(user.name, { ...user, token: randomBytes(24).toString("base64url") });
  }
  // token,user,uid,"group1,group2"
  const csv = [...tokens.values()]
    .map((t) => [t.token, t.name, randomUUID(), csvField(t.groups.join(","))].join(","))
    .join("\n");
  writeFileSync(join(dir, "tokens.csv"), `${csv}\n`, { mode: 0o600 });

  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  writeFileSync(join(dir, "sa.key"), privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  writeFileSync(join(dir, "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));
  return tokens;
}

function apiserverArgs(o: KubeApiserverOptions, port: number, certDir: string): string[] {
  const address = o.bindAddress ?? LOOPBACK;
  return [
    `--etcd-servers=${o.etcdUrl}`,
    ...(o.etcdTls === undefined
      ? []
      : [
          `--etcd-cafile=${o.etcdTls.caFile}`,
          `--etcd-certfile=${o.etcdTls.certFile}`,
          `--etcd-keyfile=${o.etcdTls.keyFile}`,
        ]),
    `--cert-dir=${certDir}`,
    `--secure-port=${port}`,
    `--bind-address=${address}`,
    `--advertise-address=${address}`,
    // Services take addresses from 198.18.0.0/15 (reserved for benchmarking, never routed), never from
    // a private or public range: a local node's pods and Services must not collide with real networks.
    "--service-cluster-ip-range=198.19.0.0/24",
    "--allow-privileged=true",
    "--authorization-mode=RBAC",
    `--token-auth-file=${join(o.dir, "tokens.csv")}`,
    // Without a controller-manager no one creates the default service accounts pods would need.
    ...(o.serviceAccounts === true ? [] : ["--disable-admission-plugins=ServiceAccount"]),
    `--service-account-issuer=https://${address}:${port}`,
    `--service-account-key-file=${join(o.dir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(o.dir, "sa.key")}`,
    // On 127.0.0.1 the `kubernetes` Service would point at the loopback (no one could use it).
    ...(address === LOOPBACK ? ["--endpoint-reconciler-type=none"] : []),
    // The node's name is not in any DNS this machine may ask: reach kubelets by their address.
    "--kubelet-preferred-address-types=InternalIP",
    ...(o.extraArgs ?? []),
  ];
}

const readCaBundle = (file: string): string | undefined => {
  try {
    const pem = readFileSync(file, "utf8");
    return pem.includes("-----END CERTIFICATE-----") ? pem : undefined;
  } catch {
    return undefined;
  }
};

/** Starts kube-apiserver and waits until `/readyz` returns 200 for the admin token. */
export async function startKubeApiserver(options: KubeApiserverOptions): Promise<RunningKubeApiserver> {
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const tokens = writeAuthFiles(options.dir, options.users ?? []);
  const admin = tokens.get(ADMIN_USER);
  if (admin === undefined) throw new Error("unreachable: no admin token");

  for (let attempt = 1; ; attempt++) {
    const address = options.bindAddress ?? LOOPBACK;
    const port = await freePort(address);
    const certDir = join(options.dir, `pki-${attempt}`);
    mkdirSync(certDir, { recursive: true, mode: 0o700 });
    const server = `https://${address}:${port}`;
    const spawnProcess = () =>
      startProcess({
        name: "kube-apiserver",
        command: options.binary,
        args: apiserverArgs(options, port, certDir),
        ...(options.scratchDir !== undefined ? { scratchDir: options.scratchDir } : {}),
        ...(options.onLine !== undefined ? { onLine: options.onLine } : {}),
      });
    const ready = (proc: ManagedProcess, deadline: Deadline) =>
      pollUntil(
        async () => {
          const pem = readCaBundle(join(certDir, "apiserver.crt"));
          if (pem === undefined) return undefined;
          const res = await probe(`${server}/readyz`, { caPem: pem, token: admin.token, timeoutMs: 3000 });
          if (res.status !== 200) throw new Error(`/readyz ${res.status}: ${res.body.slice(0, 500)}`);
          return pem;
        },
        {
          deadline,
          what: "kube-apiserver /readyz",
          intervalMs: 200,
          abortIf: () => {
            const exited = proc.exited();
            if (exited !== undefined) {
              throw new ProcessExitedError("kube-apiserver", exited.code, exited.signal, proc.tail());
            }
          },
        },
      );
    const proc = spawnProcess();
    try {
      const caPem = await ready(proc, options.deadline);
      const respawn = async (deadline: Deadline): Promise<ManagedProcess> => {
        const next = spawnProcess();
        try {
          await ready(next, deadline);
          return next;
        } catch (err) {
          await next.stop(2000);
          throw err;
        }
      };
      return { process: proc, server, caPem, tokens, respawn };
    } catch (err) {
      await proc.stop(2000);
      const portClash = err instanceof ProcessExitedError && /address already in use/.test(err.logTail);
      if (!portClash || attempt >= PORT_RETRIES) throw err;
    }
  }
}
