// A real local Kubernetes control plane (etcd + kube-apiserver, no controller-manager, no nodes) for
// integration tests and `opstask dev`. See docs/local-control-plane.md for the recipe.
//
//   const cp = await startControlPlane({ crds: ["crd.yaml"] });
//   const kc = cp.makeKubeConfig();            // admin (system:masters)
//   ...
//   await cp.stop();
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiException, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { type ControlPlaneBinaries, resolveBinaries } from "./binaries.ts";
import { applyCrds, readCrdFiles } from "./crds.ts";
import { type Deadline, deadlineIn, pollUntil } from "./deadline.ts";
import { type RunningEtcd, startEtcd } from "./etcd.ts";
import { type EtcdClientTls, writeEtcdTls } from "./etcd-tls.ts";
import {
  ADMIN_USER,
  type RunningKubeApiserver,
  startKubeApiserver,
  type TokenUser,
} from "./kube-apiserver.ts";
import { makeKubeConfig, writeKubeconfig } from "./kubeconfig.ts";
import { LogTail } from "./log-tail.ts";
import { type ManagedProcess, onProcessExit, removeDirSync } from "./process.ts";

export type { ControlPlaneBinaries } from "./binaries.ts";
export type { EtcdClientTls } from "./etcd-tls.ts";
export type { TokenUser } from "./kube-apiserver.ts";

export interface ControlPlaneOptions {
  /** CRD YAML files (multi-document allowed) to install; startControlPlane waits until they are served. */
  readonly crds?: readonly string[];
  /** Extra static-token users (`admin` in system:masters always exists). Tokens: `tokenFor(name)`. */
  readonly users?: readonly TokenUser[];
  /** Skip binary discovery. */
  readonly binaries?: ControlPlaneBinaries;
  /** Build missing binaries with scripts/testbin (default true). */
  readonly build?: boolean;
  /** Bound for a cold build of the binaries (default 45 min); not part of startTimeoutMs. */
  readonly buildTimeoutMs?: number;
  /** Bound for starting etcd + kube-apiserver and installing CRDs (default 90 s). */
  readonly startTimeoutMs?: number;
  /** Per-process SIGTERM grace period before SIGKILL in stop() (default 10 s). */
  readonly stopTimeoutMs?: number;
  /** Where to write the kubeconfig (default `<dir>/kubeconfig`, removed by stop()). */
  readonly kubeconfigPath?: string;
  /** Parent directory for the scratch directory (default os.tmpdir()). */
  readonly tmpDir?: string;
  readonly apiserverArgs?: readonly string[];
  /**
   * The address kube-apiserver binds and advertises (default 127.0.0.1). Any other address must be
   * this machine's own (the local node's host interface: src/devcluster/node) and also becomes the
   * `kubernetes` Service's endpoint, so that pods reach the apiserver.
   */
  readonly bindAddress?: string;
  /** Admit pods with their ServiceAccount's API token (a controller-manager creates the accounts). */
  readonly serviceAccounts?: boolean;
  readonly etcdArgs?: readonly string[];
  /** Stream etcd/kube-apiserver output to stderr (also: OPSTASK_DEVCLUSTER_VERBOSE=1). */
  readonly verbose?: boolean;
  /** Progress messages (default: none, or stderr when verbose). */
  readonly log?: (line: string) => void;
}

export interface ServiceAccountTokenOptions {
  /** Create the ServiceAccount if missing (default true). */
  readonly create?: boolean;
  readonly expirationSeconds?: number;
}

export interface ControlPlane {
  /** https://<bind address, default 127.0.0.1>:<port> */
  readonly server: string;
  /** Bearer token of `admin` (system:masters). */
  readonly token: string;
  /** CA bundle for `server` (the apiserver's self-signed certificate and its CA). */
  readonly caPem: string;
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port>: etcd requires a client certificate, `etcdTls`'s. */
  readonly etcdUrl: string;
  /** The CA and the client certificate that etcd accepts (kube-apiserver's), for fault injection. */
  readonly etcdTls: EtcdClientTls;
  /** Scratch directory (etcd data, certificates, tokens); removed by stop(). */
  readonly dir: string;
  /** The private key kube-apiserver signs ServiceAccount tokens with (a controller-manager's too). */
  readonly serviceAccountKeyFile: string;
  readonly binaries: ControlPlaneBinaries;
  /** Wall time of startControlPlane after the binaries were located, in ms. */
  readonly startupMs: number;
  /** A client-node KubeConfig for `admin` (default) or another static-token user. */
  makeKubeConfig(user?: string): KubeConfig;
  /** The static token of a user given in `options.users` (or `admin`). */
  tokenFor(user: string): string;
  /** A KubeConfig authenticating with any bearer token. */
  kubeConfigForToken(token: string, userName?: string): KubeConfig;
  /** A TokenRequest token for a ServiceAccount (created if missing). RBAC applies to it. */
  serviceAccountToken(namespace: string, name: string, options?: ServiceAccountTokenOptions): Promise<string>;
  /** Installs more CRDs and waits until they are served. */
  applyCrds(paths: readonly string[], timeoutMs?: number): Promise<void>;
  /** Recent etcd and kube-apiserver output. */
  logs(lines?: number): string;
  /** The etcd and kube-apiserver processes as they run now (fault injection: signals). */
  processes(): { readonly etcd: ManagedProcess; readonly apiserver: ManagedProcess };
  /**
   * Kills kube-apiserver (SIGKILL unless told otherwise), keeps it down for `downMs` (default 0), and
   * starts it again on the same address; resolves once it is ready (fault injection).
   */
  restartApiserver(options?: { readonly signal?: NodeJS.Signals; readonly downMs?: number }): Promise<void>;
  /** Stops both processes (SIGTERM, then SIGKILL) and removes the scratch directory. Idempotent. */
  stop(): Promise<void>;
}

async function waitForDefaultNamespace(kc: KubeConfig, deadline: Deadline): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await pollUntil(
    async () => {
      await core.readNamespace({ name: "default" });
      return true;
    },
    { deadline, what: "namespace default", intervalMs: 100 },
  );
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const verbose = options.verbose ?? process.env.OPSTASK_DEVCLUSTER_VERBOSE === "1";
  const log = options.log ?? (verbose ? (line: string) => process.stderr.write(`${line}\n`) : () => {});
  const crds = readCrdFiles(options.crds ?? []); // fail fast on bad YAML, before starting anything

  const binaries =
    options.binaries ??
    (await resolveBinaries({
      log,
      ...(options.build !== undefined ? { build: options.build } : {}),
      ...(options.buildTimeoutMs !== undefined ? { buildTimeoutMs: options.buildTimeoutMs } : {}),
    }));

  const started = Date.now();
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  const deadline = deadlineIn(startTimeoutMs, "startControlPlane");
  const dir = mkdtempSync(join(options.tmpDir ?? tmpdir(), "opstask-cp-"));
  const unregister = onProcessExit(() => removeDirSync(dir));
  const tails = new LogTail(300, verbose);
  // In the scratch directory (0700): only its owner reads the key etcd accepts.
  mkdirSync(join(dir, "etcd-pki"), { mode: 0o700 });
  const etcdTls = writeEtcdTls(join(dir, "etcd-pki"));
  let etcd: RunningEtcd | undefined;
  let apiserver: RunningKubeApiserver | undefined;
  /** The kube-apiserver process now (replaced by restartApiserver). */
  let apiserverProcess: ManagedProcess | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const grace = options.stopTimeoutMs ?? 10_000;
      await apiserverProcess?.stop(grace);
      await etcd?.process.stop(grace);
      removeDirSync(dir);
      unregister();
    })();
    return stopping;
  };

  try {
    log(`devcluster: starting etcd (${binaries.etcd})`);
    etcd = await startEtcd({
      binary: binaries.etcd,
      dataDir: join(dir, "etcd"),
      tls: etcdTls,
      deadline,
      scratchDir: dir,
      onLine: tails.sink("etcd"),
      ...(options.etcdArgs !== undefined ? { extraArgs: options.etcdArgs } : {}),
    });
    log(
      `devcluster: etcd ready at ${etcd.clientUrl} after ${Date.now() - started} ms; starting kube-apiserver`,
    );
    apiserver = await startKubeApiserver({
      binary: binaries.kubeApiserver,
      etcdUrl: etcd.clientUrl,
      etcdTls,
      dir: join(dir, "apiserver"),
      deadline,
      scratchDir: dir,
      onLine: tails.sink("kube-apiserver"),
      ...(options.users !== undefined ? { users: options.users } : {}),
      ...(options.apiserverArgs !== undefined ? { extraArgs: options.apiserverArgs } : {}),
      ...(options.bindAddress !== undefined ? { bindAddress: options.bindAddress } : {}),
      ...(options.serviceAccounts !== undefined ? { serviceAccounts: options.serviceAccounts } : {}),
    });
    apiserverProcess = apiserver.process;
    log(`devcluster: kube-apiserver ready at ${apiserver.server} after ${Date.now() - started} ms`);
  } catch (err) {
    const error = startupError(err, startTimeoutMs, tails); // capture logs before shutdown noise
    await stop();
    throw error;
  }

  const { server, caPem, tokens } = apiserver;
  const etcdUrl = etcd.clientUrl;
  const tokenFor = (user: string): string => {
    const issued = tokens.get(user);
    if (issued === undefined) throw new Error(`no static-token user ${JSON.stringify(user)}`);
    return issued.token;
  };
  const kubeConfigForToken = (token: string, userName = "token-user"): KubeConfig =>
    makeKubeConfig({ server, caPem, token, userName });
  const adminKubeConfig = (user = ADMIN_USER): KubeConfig => kubeConfigForToken(tokenFor(user), user);
  const kubeconfigPath = options.kubeconfigPath ?? join(dir, "kubeconfig");

  try {
    writeKubeconfig(kubeconfigPath, { server, caPem, token: tokenFor(ADMIN_USER), userName: ADMIN_USER });
    const kc = adminKubeConfig();
    await waitForDefaultNamespace(kc, deadline);
    if (crds.length > 0) {
      await applyCrds(kc, crds, deadline);
      log(`devcluster: ${crds.length} CRD(s) served after ${Date.now() - started} ms`);
    }
  } catch (err) {
    const error = startupError(err, startTimeoutMs, tails); // capture logs before shutdown noise
    await stop();
    throw error;
  }

  const startupMs = Date.now() - started;
  log(`devcluster: control plane ready in ${startupMs} ms; KUBECONFIG=${kubeconfigPath}`);

  return {
    server,
    token: tokenFor(ADMIN_USER),
    caPem,
    kubeconfigPath,
    etcdUrl,
    etcdTls,
    dir,
    serviceAccountKeyFile: join(dir, "apiserver", "sa.key"),
    binaries,
    startupMs,
    makeKubeConfig: adminKubeConfig,
    tokenFor,
    kubeConfigForToken,
    serviceAccountToken: (namespace, name, saOptions = {}) =>
      serviceAccountToken(adminKubeConfig(), namespace, name, saOptions),
    applyCrds: (paths, timeoutMs = 60_000) =>
      applyCrds(adminKubeConfig(), readCrdFiles(paths), deadlineIn(timeoutMs, "applyCrds")),
    logs: (lines = 40) => tails.render(lines),
    processes: () => {
      if (etcd === undefined || apiserverProcess === undefined) throw new Error("control plane not running");
      return { etcd: etcd.process, apiserver: apiserverProcess };
    },
    restartApiserver: async ({ signal = "SIGKILL", downMs = 0 } = {}) => {
      const running = apiserver;
      const current = apiserverProcess;
      if (running === undefined || current === undefined) throw new Error("control plane not running");
      if (current.exited() === undefined) {
        process.kill(current.pid, signal);
        await current.exit;
      }
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      apiserverProcess = await running.respawn(deadlineIn(startTimeoutMs, "restartApiserver"));
    },
    stop,
  };
}

function startupError(err: unknown, timeoutMs: number, tails: LogTail): Error {
  const reason = err instanceof Error ? err.message : String(err);
  const error = new Error(
    `local control plane failed to start (timeout ${timeoutMs} ms): ${reason}\n${tails.render(40)}`,
  );
  error.cause = err;
  return error;
}

async function serviceAccountToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  options: ServiceAccountTokenOptions,
): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  if (options.create !== false) {
    try {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    } catch (err) {
      if (!(err instanceof ApiException) || err.code !== 409) throw err;
    }
  }
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: {
      spec: {
        audiences: [],
        ...(options.expirationSeconds !== undefined ? { expirationSeconds: options.expirationSeconds } : {}),
      },
    },
  });
  const token = request.status?.token;
  if (token === undefined || token === "")
    throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}
