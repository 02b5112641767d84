// A real etcd 3.5 + etcd-backup-restore (`etcdbrctl server`, Local snapstore) for `opstask dev` and
// integration tests: the HTTP server that druid's on-demand snapshot handler calls
// (POST /snapshot/full[?final=true], POST /snapshot/delta). Recipe and API:
// docs/local-control-plane.md §3.
//
//   const br = await startBackupRestore();
//   await fetch(`${br.url}/snapshot/full`, { method: "POST" });   // 200, JSON Snapshot
//   await br.listSnapshots();                                     // ["Full-00000000-00000001-<unix>.gz", ...]
//   await br.stop();
//
// Caveat: etcdbrctl's HTTP server listens on all interfaces, and v0.43.0 has no way to narrow it
// (etcd itself listens on 127.0.0.1 only). In etcd-backup-restore v0.43.0:
//   pkg/server/httpAPI.go:146   Addr: fmt.Sprintf(":%d", h.Port),   (then ListenAndServe, :179)
//   pkg/server/init.go:118-121  the server's only flags: --server-port, --enable-profiling,
//                               --server-cert, --server-key (its --config-file has the same four fields)
//   pkg/server/backuprestoreserver.go:121  the handler is given the port alone
// --server-cert/--server-key only switch to HTTPS (ListenAndServeTLS, httpAPI.go:189) with no
// client-certificate check, so they do not authenticate callers either. Go binds ":<port>" as the
// dual-stack wildcard ([::]:<port> in /proc/net/tcp6). Confining it needs a network namespace and a
// loopback bridge; see docs/local-control-plane.md §3.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { defaultRepoRoot, runTestbinScript } from "./binaries.ts";
import { type Deadline, deadlineIn, pollUntil } from "./deadline.ts";
import { type RunningEtcd, startEtcd } from "./etcd.ts";
import { probe } from "./http.ts";
import { LogTail } from "./log-tail.ts";
import { freePort } from "./ports.ts";
import {
  type ManagedProcess,
  onProcessExit,
  ProcessExitedError,
  removeDirSync,
  startProcess,
} from "./process.ts";

export interface BackupRestoreBinaries {
  /** etcd 3.5.x (paired with the etcd 3.5 libraries inside etcdbrctl v0.42+). */
  readonly etcd: string;
  readonly etcdbrctl: string;
}

export interface BackupRestoreOptions {
  /** Parent directory of the scratch directory (default os.tmpdir()). The scratch directory is removed by stop(). */
  readonly dir?: string;
  /**
   * Go duration for `--delta-snapshot-period` (default "1s"; etcdbrctl disables delta snapshots below 1s,
   * and then POST /snapshot/delta answers 500). A periodic delta snapshot consumes the buffered events, so
   * a test expecting an `Incr` answer from POST /snapshot/delta should use a long period (e.g. "1h").
   */
  readonly deltaSnapshotPeriod?: string;
  /** Progress messages (default: none, or stderr when verbose). */
  readonly log?: (line: string) => void;
  /** Bound for starting etcd and etcdbrctl until the first full snapshot exists (default 60 s). */
  readonly startTimeoutMs?: number;
  /** Skip binary discovery. */
  readonly binaries?: BackupRestoreBinaries;
  /** Build missing binaries with `scripts/testbin etcdbrctl` (default true). */
  readonly build?: boolean;
  /** Bound for a cold build of the binaries (default 45 min); not part of startTimeoutMs. */
  readonly buildTimeoutMs?: number;
  /** Per-process SIGTERM grace period before SIGKILL in stop() (default 10 s). */
  readonly stopTimeoutMs?: number;
  /** `--store-prefix` (default "etcd"). */
  readonly storePrefix?: string;
  /** `--max-backups` for the LimitBased garbage collection (default 3 full snapshots). */
  readonly maxBackups?: number;
  /** Extra `etcdbrctl server` flags (appended last). */
  readonly extraArgs?: readonly string[];
  /** Stream etcd/etcdbrctl output to stderr (also: OPSTASK_DEVCLUSTER_VERBOSE=1). */
  readonly verbose?: boolean;
}

export interface BackupRestore {
  /** http://127.0.0.1:<port> of the etcd member etcdbrctl backs up. */
  readonly etcdClientUrl: string;
  /** The backup-restore HTTP port. */
  readonly port: number;
  /** http://127.0.0.1:<port> (the server itself listens on all interfaces). */
  readonly url: string;
  /** Where snapshot files land: `<HOME>/default.bkp/<store-prefix>/v2` (flat, no Backup-* dirs). */
  readonly storeDir: string;
  /** Scratch directory (etcd data, HOME, store, temp); removed by stop(). */
  readonly dir: string;
  readonly binaries: BackupRestoreBinaries;
  /** Wall time of startBackupRestore after the binaries were located, in ms. */
  readonly startupMs: number;
  /** Snapshot files under `storeDir`, as paths relative to it, sorted. */
  listSnapshots(): Promise<string[]>;
  /** Writes `n` new keys to etcd (v3 HTTP/JSON gateway) and resolves once etcd acknowledged them. */
  putKeys(n: number): Promise<void>;
  /**
   * Whether etcdbrctl has buffered etcd events that no snapshot holds yet (its gauge
   * `etcdbr_snapshot_required{kind="Incr"}`), i.e. whether POST /snapshot/delta would write an `Incr`.
   */
  deltaPending(): Promise<boolean>;
  /** Recent etcd and etcdbrctl output. */
  logs(lines?: number): string;
  /** Stops etcdbrctl, then etcd (SIGTERM, then SIGKILL) and removes the scratch directory. Idempotent. */
  stop(): Promise<void>;
}

const PORT_RETRIES = 3;
const GO_DURATION = /^(?:0|(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/;

/** Finds (or builds, with `scripts/testbin etcdbrctl`) etcd 3.5 and etcdbrctl. */
export async function resolveBackupRestoreBinaries(
  options: Pick<BackupRestoreOptions, "build" | "buildTimeoutMs" | "log"> & {
    readonly repoRoot?: string;
  } = {},
): Promise<BackupRestoreBinaries> {
  const repoRoot = options.repoRoot ?? defaultRepoRoot();
  const pick = (paths: ReadonlyMap<string, string>): BackupRestoreBinaries | undefined => {
    const etcd = paths.get("etcd35");
    const etcdbrctl = paths.get("etcdbrctl");
    return etcd !== undefined && etcdbrctl !== undefined ? { etcd, etcdbrctl } : undefined;
  };
  const checked = await runTestbinScript(["--check", "etcdbrctl"], { repoRoot, timeoutMs: 30_000 });
  const cached = checked.code === 0 ? pick(checked.paths) : undefined;
  if (cached !== undefined) return cached;
  if (options.build === false) {
    throw new Error(`etcdbrctl/etcd35 are not built; run scripts/testbin etcdbrctl\n${checked.stderrTail}`);
  }
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(
    "devcluster: building etcdbrctl and etcd 3.5 with scripts/testbin etcdbrctl (first run only; several minutes)",
  );
  const built = await runTestbinScript(["etcdbrctl"], {
    repoRoot,
    timeoutMs: options.buildTimeoutMs ?? 45 * 60_000,
    log,
  });
  const binaries = built.code === 0 ? pick(built.paths) : undefined;
  if (binaries === undefined) {
    throw new Error(`scripts/testbin etcdbrctl failed (exit ${String(built.code)}):\n${built.stderrTail}`);
  }
  return binaries;
}

const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

async function postJson(url: string, body: unknown, timeoutMs = 5_000): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as unknown;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The peer URLs of the single etcd member (startEtcd does not return them), via the JSON gateway. */
async function memberPeerUrls(clientUrl: string): Promise<string[]> {
  const list = await postJson(`${clientUrl}/v3/cluster/member/list`, {});
  const members = isRecord(list) && Array.isArray(list.members) ? list.members : [];
  const first: unknown = members[0];
  const urls = isRecord(first) && Array.isArray(first.peerURLs) ? first.peerURLs : [];
  const peerUrls = urls.filter((u): u is string => typeof u === "string");
  if (members.length !== 1 || peerUrls.length === 0)
    throw new Error(`unexpected etcd member list: ${JSON.stringify(list)}`);
  return peerUrls;
}

/** The etcd config etcdbrctl reads from ETCD_CONF (member name = POD_NAME = "default"). */
function etcdConfigYaml(dataDir: string, clientUrl: string, peerUrls: readonly string[]): string {
  const list = (urls: readonly string[]): string => urls.map((u) => `\n  - ${u}`).join("");
  return [
    "name: default",
    `data-dir: ${JSON.stringify(dataDir)}`,
    `listen-client-urls: ${clientUrl}`,
    `advertise-client-urls:\n  default:${list([clientUrl])}`,
    `listen-peer-urls: ${peerUrls.join(",")}`,
    `initial-advertise-peer-urls:\n  default:${list(peerUrls)}`,
    `initial-cluster: ${peerUrls.map((u) => `default=${u}`).join(",")}`,
    "initial-cluster-token: etcd-cluster",
    "initial-cluster-state: new",
    "",
  ].join("\n");
}

interface Layout {
  readonly dataDir: string;
  readonly home: string;
  readonly tempDir: string;
  readonly etcdConf: string;
}

function serverArgs(
  etcdClientUrl: string,
  port: number,
  layout: Layout,
  options: BackupRestoreOptions,
  storePrefix: string,
): string[] {
  return [
    "server",
    `--endpoints=${etcdClientUrl}`,
    "--insecure-transport=true",
    "--insecure-skip-tls-verify=true",
    "--etcd-connection-timeout=30s",
    `--server-port=${port}`,
    "--storage-provider=Local",
    `--store-prefix=${storePrefix}`,
    "--schedule=0 */1 * * *",
    `--delta-snapshot-period=${options.deltaSnapshotPeriod ?? "1s"}`,
    `--data-dir=${layout.dataDir}`,
    `--snapstore-temp-directory=${layout.tempDir}`,
    "--garbage-collection-policy=LimitBased",
    `--max-backups=${options.maxBackups ?? 3}`,
    "--garbage-collection-period=1m",
    // The first leadership check happens after one period (default 5s, minimum >1s); it dominates start-up time.
    "--reelection-period=1100ms",
    ...(options.extraArgs ?? []),
  ];
}

async function latestFullSnapshot(url: string): Promise<boolean | undefined> {
  const health = await probe(`${url}/healthz`, { timeoutMs: 1000 });
  if (health.status !== 200) return undefined;
  const latest = await probe(`${url}/snapshot/latest`, { timeoutMs: 2000 });
  if (latest.status !== 200) return undefined;
  const parsed: unknown = JSON.parse(latest.body);
  return isRecord(parsed) && isRecord(parsed.fullSnapshot) ? true : undefined;
}

async function startServer(
  binary: string,
  etcdClientUrl: string,
  layout: Layout,
  options: BackupRestoreOptions,
  storePrefix: string,
  scratchDir: string,
  deadline: Deadline,
  onLine: (line: string) => void,
): Promise<{ process: ManagedProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    // etcdbrctl listens on ":<port>" (all interfaces), so check the wildcard address.
    const port = await freePort("0.0.0.0");
    const url = `http://127.0.0.1:${port}`;
    const proc = startProcess({
      name: "etcdbrctl",
      command: binary,
      args: serverArgs(etcdClientUrl, port, layout, options, storePrefix),
      env: {
        ...process.env,
        HOME: layout.home,
        ETCD_CONF: layout.etcdConf,
        POD_NAME: "default",
        POD_NAMESPACE: "default",
      },
      cwd: scratchDir,
      scratchDir,
      onLine,
    });
    try {
      await pollUntil(() => latestFullSnapshot(url), {
        deadline,
        what: "etcdbrctl /healthz 200 and a full snapshot in /snapshot/latest",
        intervalMs: 100,
        abortIf: () => {
          const exited = proc.exited();
          if (exited !== undefined)
            throw new ProcessExitedError("etcdbrctl", exited.code, exited.signal, proc.tail());
        },
      });
      return { process: proc, port };
    } catch (err) {
      await proc.stop(2000);
      const portClash = err instanceof ProcessExitedError && /address already in use/.test(err.logTail);
      if (!portClash || attempt >= PORT_RETRIES) throw err;
    }
  }
}

async function listFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => relative(dir, join(e.parentPath, e.name)))
      .sort();
  } catch (err) {
    if (isRecord(err) && err.code === "ENOENT") return [];
    throw err;
  }
}

export async function startBackupRestore(options: BackupRestoreOptions = {}): Promise<BackupRestore> {
  const verbose = options.verbose ?? process.env.OPSTASK_DEVCLUSTER_VERBOSE === "1";
  const log = options.log ?? (verbose ? (line: string) => process.stderr.write(`${line}\n`) : () => {});
  const period = options.deltaSnapshotPeriod ?? "1s";
  if (!GO_DURATION.test(period))
    throw new Error(
      `deltaSnapshotPeriod ${JSON.stringify(period)} is not a Go duration (e.g. "1s", "20s", "1h")`,
    );
  const storePrefix = options.storePrefix ?? "etcd";
  if (storePrefix === "" || storePrefix.includes(".."))
    throw new Error(`storePrefix ${JSON.stringify(storePrefix)} is invalid`);

  const binaries =
    options.binaries ??
    (await resolveBackupRestoreBinaries({
      log,
      ...(options.build !== undefined ? { build: options.build } : {}),
      ...(options.buildTimeoutMs !== undefined ? { buildTimeoutMs: options.buildTimeoutMs } : {}),
    }));

  const started = Date.now();
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = deadlineIn(startTimeoutMs, "startBackupRestore");
  const dir = mkdtempSync(join(options.dir ?? tmpdir(), "opstask-br-"));
  const unregister = onProcessExit(() => removeDirSync(dir));
  const layout: Layout = {
    dataDir: join(dir, "etcd"),
    home: join(dir, "home"),
    tempDir: join(dir, "tmp"),
    etcdConf: join(dir, "etcd.conf.yaml"),
  };
  const storeDir = join(layout.home, "default.bkp", storePrefix, "v2");
  const tails = new LogTail(300, verbose);
  let etcd: RunningEtcd | undefined;
  let server: ManagedProcess | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const grace = options.stopTimeoutMs ?? 10_000;
      await server?.stop(grace);
      await etcd?.process.stop(grace);
      removeDirSync(dir);
      unregister();
    })();
    return stopping;
  };

  let port: number;
  try {
    mkdirSync(layout.home, { mode: 0o700 });
    mkdirSync(layout.tempDir, { mode: 0o700 });
    log(`devcluster: starting etcd 3.5 (${binaries.etcd})`);
    etcd = await startEtcd({
      binary: binaries.etcd,
      dataDir: layout.dataDir,
      deadline,
      scratchDir: dir,
      onLine: tails.sink("etcd"),
    });
    const peerUrls = await memberPeerUrls(etcd.clientUrl);
    writeFileSync(layout.etcdConf, etcdConfigYaml(layout.dataDir, etcd.clientUrl, peerUrls), { mode: 0o600 });
    log(`devcluster: etcd ready at ${etcd.clientUrl} after ${Date.now() - started} ms; starting etcdbrctl`);
    const running = await startServer(
      binaries.etcdbrctl,
      etcd.clientUrl,
      layout,
      options,
      storePrefix,
      dir,
      deadline,
      tails.sink("etcdbrctl"),
    );
    server = running.process;
    port = running.port;
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const error = new Error(
      `etcd-backup-restore failed to start (timeout ${startTimeoutMs} ms): ${reason}\n${tails.render(40)}`,
    );
    error.cause = err;
    await stop();
    throw error;
  }

  const startupMs = Date.now() - started;
  const url = `http://127.0.0.1:${port}`;
  const etcdClientUrl = etcd.clientUrl;
  log(`devcluster: etcd-backup-restore ready at ${url} in ${startupMs} ms (store ${storeDir})`);

  let sequence = 0;
  const putKeys = async (n: number): Promise<void> => {
    if (!Number.isInteger(n) || n < 0) throw new Error(`putKeys: n must be a non-negative integer, got ${n}`);
    const keys = Array.from(
      { length: n },
      () => `/opstask/devcluster/key-${String(++sequence).padStart(6, "0")}`,
    );
    const concurrency = 16;
    for (let i = 0; i < keys.length; i += concurrency) {
      await Promise.all(
        keys
          .slice(i, i + concurrency)
          .map((key) =>
            postJson(`${etcdClientUrl}/v3/kv/put`, { key: b64(key), value: b64(`value of ${key}`) }),
          ),
      );
    }
  };

  const deltaPending = async (): Promise<boolean> => {
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
    const body = await res.text();
    if (!res.ok) throw new Error(`GET ${url}/metrics: HTTP ${res.status}`);
    const line = body.split("\n").find((l) => l.startsWith('etcdbr_snapshot_required{kind="Incr"}'));
    return line !== undefined && Number(line.split(/\s+/)[1]) > 0;
  };

  return {
    etcdClientUrl,
    port,
    url,
    storeDir,
    dir,
    binaries,
    startupMs,
    listSnapshots: () => listFiles(storeDir),
    putKeys,
    deltaPending,
    logs: (lines = 40) => tails.render(lines),
    stop,
  };
}
