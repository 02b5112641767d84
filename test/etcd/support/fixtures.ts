/**
 * docs/contract.md §14 fixtures for handler tests (F-ETCD, F-TASK, F-TLS) in wire form, and a runner that calls
 * one handler phase with the in-memory ObjectReader and Node's HTTP client routed to the stand-in
 * (`--resolve <etcd>-client.<ns>:*:127.0.0.1`, the rule written before the snapshot host got its `.svc`:
 * it routes `<etcd>-client.<ns>.svc` too).
 */
import { Effect, Layer, Result } from "effect";
import { decodeEtcdOpsTask, type EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import { nodeBackupRestoreHttpLayer } from "../../../src/etcd/backup-restore-http-node.ts";
import { MemoryObjects, memoryObjectReaderLayer } from "../../../src/etcd/object-reader-memory.ts";
import {
  makeOnDemandSnapshotHandler,
  type OnDemandSnapshotHandlerOptions,
} from "../../../src/etcd/on-demand-snapshot/handler.ts";
import type { ResolveOverride } from "../../../src/etcd/resolve-override.ts";
import { Resources } from "../../../src/etcd/services.ts";
import type { PhaseOutcome } from "../../../src/machine/types.ts";
import { memberContext } from "./member-context.ts";

export const namespace = "ns";
export const etcdName = "test-etcd";
export const etcdUid = "0b5e2a52-etcd-uid";
/** The client Service as etcd's own client (maintenance) addresses it. */
export const host = `${etcdName}-client.${namespace}`;
/** The host the snapshot call dials and verifies (etcd-druid v0.38.1's `GetClientHostname`). */
export const svcHost = `${host}.svc`;
export const caSecretName = "ca-etcdbr";

type Json = Record<string, unknown>;

export interface EtcdOptions {
  readonly port?: number;
  /** false: `spec.backup: {}` (F-ETCD-NOBACKUP). */
  readonly backup?: boolean;
  /** "none": no status (F-ETCD-NOTREADY); "False": the Ready condition with status False. */
  readonly ready?: "True" | "False" | "none";
  readonly tls?: { readonly name?: string; readonly dataKey?: string };
  readonly uid?: string;
  /** `spec.externallyManagedMemberAddresses`; `replicas` follows its length, as druid's CRD demands. */
  readonly members?: ReadonlyArray<string>;
}

export const etcdObject = (options: EtcdOptions = {}): Json => {
  const backup: Json = {};
  if (options.port !== undefined) backup.port = options.port;
  if (options.backup !== false) backup.store = { prefix: "test-prefix" };
  if (options.tls !== undefined) {
    backup.tls = {
      tlsCASecretRef: {
        ...(options.tls.name === undefined ? {} : { name: options.tls.name }),
        ...(options.tls.dataKey === undefined ? {} : { dataKey: options.tls.dataKey }),
      },
      serverTLSSecretRef: { name: "etcdbr-server-tls" },
    };
  }
  const ready = options.ready ?? "True";
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "Etcd",
    metadata: { name: etcdName, namespace, uid: options.uid ?? etcdUid },
    spec: {
      replicas: options.members?.length ?? 1,
      labels: { app: etcdName },
      etcd: {},
      backup,
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

export interface StatefulSetOptions {
  /** The UID of the controller owner reference; undefined: no owner references at all. */
  readonly controllerUid?: string | undefined;
  readonly volumes?: ReadonlyArray<Json>;
}

export const caVolume = (secretName = caSecretName): Json => ({
  name: "backup-restore-ca",
  secret: { secretName },
});

export const statefulSetObject = (options: StatefulSetOptions = {}): Json => {
  const controllerUid = "controllerUid" in options ? options.controllerUid : etcdUid;
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: {
      name: etcdName,
      namespace,
      uid: "sts-uid",
      ...(controllerUid === undefined
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: "druid.gardener.cloud/v1alpha1",
                kind: "Etcd",
                name: etcdName,
                uid: controllerUid,
                controller: true,
              },
            ],
          }),
    },
    spec: {
      serviceName: `${etcdName}-peer`,
      replicas: 1,
      selector: { matchLabels: { app: etcdName } },
      template: {
        metadata: { labels: { app: etcdName } },
        spec: {
          containers: [{ name: "etcd", image: "example.invalid/placeholder:0" }],
          volumes: options.volumes ?? [caVolume()],
        },
      },
    },
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
  readonly type?: "full" | "delta";
  readonly isFinal?: boolean;
  /** The whole `spec.config` (another member); `type` and `isFinal` are then ignored. */
  readonly config?: Readonly<Record<string, unknown>>;
}

/** F-TASK, decoded as the handler receives it. */
export const taskOf = (options: TaskOptions = {}): EtcdOpsTask => {
  const name = options.etcdName === undefined ? etcdName : options.etcdName;
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
      config: options.config ?? {
        onDemandSnapshot: {
          type: options.type ?? "full",
          ...(options.isFinal === undefined ? {} : { isFinal: options.isFinal }),
          timeoutSecondsFull: 150,
        },
      },
    },
  });
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

/** The world one handler call sees: objects in memory, the stand-in reached through `resolve`. */
export const world = (
  objects: ReadonlyArray<readonly [keyof typeof Resources, Json]> = [],
): MemoryObjects => {
  const store = new MemoryObjects();
  for (const [resource, object] of objects) store.put(Resources[resource], object);
  return store;
};

export const toStandIn: ReadonlyArray<ResolveOverride> = [{ host, port: "*", address: "127.0.0.1" }];

export interface RunOptions extends OnDemandSnapshotHandlerOptions {
  readonly resolve?: ReadonlyArray<ResolveOverride>;
}

export const run = (
  phase: "admit" | "execute" | "cleanup",
  task: EtcdOpsTask,
  objects: MemoryObjects,
  options: RunOptions = {},
): Promise<PhaseOutcome> => {
  const handler = makeOnDemandSnapshotHandler(
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
  const layer = Layer.mergeAll(
    memoryObjectReaderLayer(objects),
    nodeBackupRestoreHttpLayer({ resolve: options.resolve ?? toStandIn }),
  );
  return Effect.runPromise(
    handler[phase](task, memberContext("onDemandSnapshot", task, { phase })).pipe(Effect.provide(layer)),
  );
};
