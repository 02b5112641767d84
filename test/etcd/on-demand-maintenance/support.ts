/**
 * Fixtures for the maintenance handler tests: a real single-member etcd on 127.0.0.1 (the binary from
 * scripts/testbin), an Etcd object whose client port is that etcd's, a maintenance task, a runner that
 * calls one handler phase with the in-memory ObjectReader and the Node etcd gateway dialling
 * `<etcd>-client.<ns>` at 127.0.0.1 (`--resolve`), and a few direct JSON-gateway calls to fill etcd and
 * look at it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Effect, Layer, Result } from "effect";
import { resolveBinaries } from "../../../src/devcluster/binaries.ts";
import { deadlineIn, pollUntil } from "../../../src/devcluster/deadline.ts";
import { type RunningEtcd, startEtcd } from "../../../src/devcluster/etcd.ts";
import { freePorts } from "../../../src/devcluster/ports.ts";
import { ProcessExitedError, startProcess } from "../../../src/devcluster/process.ts";
import { decodeEtcdOpsTask, type EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import { makeNodeEtcdGateway, nodeEtcdGatewayLayer } from "../../../src/etcd/etcd-client.ts";
import { MemoryObjects, memoryObjectReaderLayer } from "../../../src/etcd/object-reader-memory.ts";
import {
  makeOnDemandMaintenanceHandler,
  type OnDemandMaintenanceHandlerOptions,
} from "../../../src/etcd/on-demand-maintenance/handler.ts";
import type { ResolveOverride } from "../../../src/etcd/resolve-override.ts";
import { Resources } from "../../../src/etcd/services.ts";
import type { PhaseOutcome } from "../../../src/machine/types.ts";
import { etcdName, etcdUid, host, namespace } from "../support/fixtures.ts";
import { memberContext } from "../support/member-context.ts";

export { etcdName, host, namespace };

type Json = Record<string, unknown>;

// --- a real etcd --------------------------------------------------------------------------------------

export interface TestEtcd {
  readonly url: string;
  readonly port: number;
  readonly stop: () => Promise<void>;
}

/** A single-member etcd on free 127.0.0.1 ports, in a fresh data directory removed by `stop`. */
export const startTestEtcd = async (extraArgs: ReadonlyArray<string> = []): Promise<TestEtcd> => {
  const binaries = await resolveBinaries();
  const dataDir = mkdtempSync(join(tmpdir(), "opstask-maintenance-"));
  let running: RunningEtcd;
  try {
    running = await startEtcd({
      binary: binaries.etcd,
      dataDir: join(dataDir, "data"),
      scratchDir: dataDir,
      deadline: deadlineIn(30_000, "maintenance test etcd"),
      extraArgs,
    });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: running.clientUrl,
    port: Number(new URL(running.clientUrl).port),
    stop: async () => {
      await running.process.stop(5_000);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

export interface TlsEtcdOptions {
  /** The server certificate and key (PEM); the certificate must name `<etcd>-client.<ns>`. */
  readonly certPem: string;
  readonly keyPem: string;
  /** The CA that signed it, to probe readiness. */
  readonly caPem: string;
  /**
   * Require client certificates signed by `caPem` (`--client-cert-auth`, as druid configures etcd).
   * The server certificate must then allow clientAuth too: etcd's own gateway dials with it.
   */
  readonly clientCertAuth?: { readonly certPem: string; readonly keyPem: string };
}

/**
 * A single-member etcd serving its client port over https (`startEtcd` probes plain http, so this one
 * is started here and probed through the gateway client itself, over `--resolve`).
 */
export const startTlsTestEtcd = async (options: TlsEtcdOptions): Promise<TestEtcd> => {
  const binaries = await resolveBinaries();
  const dir = mkdtempSync(join(tmpdir(), "opstask-maintenance-tls-"));
  mkdirSync(join(dir, "data"), { mode: 0o700 });
  writeFileSync(join(dir, "server.crt"), options.certPem);
  writeFileSync(join(dir, "server.key"), options.keyPem, { mode: 0o600 });
  writeFileSync(join(dir, "ca.crt"), options.caPem);
  const clientAuth = options.clientCertAuth;
  const [clientPort = 0, peerPort = 0] = await freePorts(2);
  const clientUrl = `https://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const proc = startProcess({
    name: "etcd-tls",
    command: binaries.etcd,
    args: [
      "--name=default",
      `--data-dir=${join(dir, "data")}`,
      `--listen-client-urls=${clientUrl}`,
      `--advertise-client-urls=${clientUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      "--initial-cluster-state=new",
      `--cert-file=${join(dir, "server.crt")}`,
      `--key-file=${join(dir, "server.key")}`,
      ...(clientAuth === undefined
        ? []
        : ["--client-cert-auth=true", `--trusted-ca-file=${join(dir, "ca.crt")}`]),
      "--unsafe-no-fsync=true",
      "--log-level=warn",
    ],
    scratchDir: dir,
  });
  const stop = async () => {
    await proc.stop(5_000);
    rmSync(dir, { recursive: true, force: true });
  };
  const gatewayClient = makeNodeEtcdGateway({ resolve: toLocalhost });
  const endpoint = {
    url: `https://${host}:${clientPort}`,
    timeoutMs: 1_000,
    tls: {
      ca: options.caPem,
      ...(clientAuth === undefined ? {} : { cert: clientAuth.certPem, key: clientAuth.keyPem }),
    },
  };
  try {
    await pollUntil(
      () =>
        Effect.runPromise(gatewayClient.status(endpoint)).then((answer) =>
          answer.revision > 0 ? true : undefined,
        ),
      {
        deadline: deadlineIn(30_000, "maintenance test etcd (TLS)"),
        what: "etcd status over https",
        intervalMs: 100,
        abortIf: () => {
          const exited = proc.exited();
          if (exited !== undefined)
            throw new ProcessExitedError("etcd", exited.code, exited.signal, proc.tail());
        },
      },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: clientUrl, port: clientPort, stop };
};

// --- objects ------------------------------------------------------------------------------------------

export interface EtcdOptions {
  readonly clientPort?: number;
  /** "none": no status; "False": the Ready condition with status False. */
  readonly ready?: "True" | "False" | "none";
  /** false: `spec.backup: {}` (no store). */
  readonly backup?: boolean;
  readonly clientUrlTls?: Json;
  /** `spec.externallyManagedMemberAddresses` (replicas follows its length). */
  readonly members?: ReadonlyArray<string>;
}

export const etcdObject = (options: EtcdOptions = {}): Json => {
  const ready = options.ready ?? "True";
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "Etcd",
    metadata: { name: etcdName, namespace, uid: etcdUid },
    spec: {
      replicas: options.members?.length ?? 1,
      labels: { app: etcdName },
      etcd: {
        ...(options.clientPort === undefined ? {} : { clientPort: options.clientPort }),
        ...(options.clientUrlTls === undefined ? {} : { clientUrlTls: options.clientUrlTls }),
      },
      backup: options.backup === true ? { store: { prefix: "test-prefix" } } : {},
      ...(options.members === undefined ? {} : { externallyManagedMemberAddresses: options.members }),
    },
    ...(ready === "none"
      ? {}
      : {
          status: {
            conditions: [
              {
                type: "Ready",
                status: ready,
                reason: "Quorate",
                message: "ready for test",
                lastTransitionTime: now,
                lastUpdateTime: now,
              },
            ],
          },
        }),
  };
};

export const secretObject = (name: string, data: Readonly<Record<string, string>>): Json => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, namespace },
  type: "Opaque",
  data: Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString("base64")]),
  ),
});

export interface TaskOptions {
  /** null: no `etcdName` key at all. */
  readonly etcdName?: string | null;
  /** undefined: absent; a value: `compaction: {physical}` (`{}` when physical is undefined). */
  readonly compaction?: { readonly physical?: boolean };
  readonly defragmentation?: boolean;
  /** Any other config member instead (e.g. `onDemandSnapshot`). */
  readonly config?: Json;
}

/** A maintenance task, decoded as the handler receives it. */
export const taskOf = (options: TaskOptions = {}): EtcdOpsTask => {
  const name = options.etcdName === undefined ? etcdName : options.etcdName;
  const maintenance: Json = {
    ...(options.compaction === undefined ? {} : { compaction: options.compaction }),
    ...(options.defragmentation === true ? { defragmentation: {} } : {}),
  };
  const result = decodeEtcdOpsTask({
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "EtcdOpsTask",
    metadata: {
      name: "task-1",
      namespace,
      uid: "task-uid-1",
      resourceVersion: "1",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: {
      ...(name === null ? {} : { etcdName: name }),
      ttlSecondsAfterFinished: 10,
      config: options.config ?? { onDemandMaintenance: maintenance },
    },
  });
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

export const world = (
  objects: ReadonlyArray<readonly [keyof typeof Resources, Json]> = [],
): MemoryObjects => {
  const store = new MemoryObjects();
  for (const [resource, object] of objects) store.put(Resources[resource], object);
  return store;
};

/** `--resolve <etcd>-client.<ns>:*:127.0.0.1` */
export const toLocalhost: ReadonlyArray<ResolveOverride> = [{ host, port: "*", address: "127.0.0.1" }];

export interface RunOptions extends OnDemandMaintenanceHandlerOptions {
  readonly resolve?: ReadonlyArray<ResolveOverride>;
}

export const run = (
  phase: "admit" | "execute" | "cleanup",
  task: EtcdOpsTask,
  objects: MemoryObjects,
  options: RunOptions = {},
): Promise<PhaseOutcome> => {
  const handler = makeOnDemandMaintenanceHandler(
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
  const layer = Layer.mergeAll(
    memoryObjectReaderLayer(objects),
    nodeEtcdGatewayLayer({ resolve: options.resolve ?? toLocalhost }),
  );
  return Effect.runPromise(
    handler[phase](task, memberContext("onDemandMaintenance", task, { phase })).pipe(Effect.provide(layer)),
  );
};

// --- direct JSON-gateway calls ------------------------------------------------------------------------

export interface GatewayAnswer {
  readonly status: number;
  readonly body: Json;
}

const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null;

export const gateway = async (url: string, path: string, payload: Json): Promise<GatewayAnswer> => {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(30_000),
  });
  const body: unknown = await res.json();
  if (!isJson(body)) throw new Error(`${path}: not a JSON object`);
  return { status: res.status, body };
};

const b64 = (text: string) => Buffer.from(text).toString("base64");

const int = (value: unknown): number => {
  const n = Number(value ?? 0);
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${String(value)}`);
  return n;
};

export const headerRevision = (answer: GatewayAnswer): number => {
  const header = answer.body.header;
  return int(isJson(header) ? header.revision : undefined);
};

/**
 * Writes `keys` keys `rounds` times each (so that every round but the last is history compaction frees),
 * `valueBytes` bytes per value, `concurrency` puts at a time. Returns the revision after the last put.
 */
export const fill = async (
  url: string,
  options: { keys: number; rounds: number; valueBytes: number; prefix?: string; concurrency?: number },
): Promise<number> => {
  const prefix = options.prefix ?? "fill";
  const jobs: Array<() => Promise<number>> = [];
  for (let round = 0; round < options.rounds; round++) {
    for (let key = 0; key < options.keys; key++) {
      const value = `${round}:`.padEnd(options.valueBytes, String.fromCharCode(97 + ((round + key) % 26)));
      jobs.push(async () => {
        const answer = await gateway(url, "/v3/kv/put", {
          key: b64(`${prefix}/${key}`),
          value: b64(value),
        });
        if (answer.status !== 200) throw new Error(`put failed: ${JSON.stringify(answer.body)}`);
        return headerRevision(answer);
      });
    }
  }
  let revision = 0;
  // Rounds in order, so that a key's last value is the newest; keys of a round in parallel.
  for (let start = 0; start < jobs.length; start += options.concurrency ?? 32) {
    const batch = jobs.slice(start, start + (options.concurrency ?? 32));
    for (const rev of await Promise.all(batch.map((job) => job()))) revision = Math.max(revision, rev);
  }
  return revision;
};

export interface Status {
  readonly revision: number;
  readonly dbSize: number;
  readonly dbSizeInUse: number;
}

export const status = async (url: string): Promise<Status> => {
  const answer = await gateway(url, "/v3/maintenance/status", {});
  return {
    revision: headerRevision(answer),
    dbSize: int(answer.body.dbSize),
    dbSizeInUse: int(answer.body.dbSizeInUse),
  };
};

/** A range read of one key at `revision`: 200 with the kvs, or etcd's error (e.g. compacted). */
export const rangeAt = (url: string, key: string, revision: number): Promise<GatewayAnswer> =>
  gateway(url, "/v3/kv/range", { key: b64(key), revision: String(revision) });

export const compactTo = (url: string, revision: number): Promise<GatewayAnswer> =>
  gateway(url, "/v3/kv/compaction", { revision: String(revision), physical: true });

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
