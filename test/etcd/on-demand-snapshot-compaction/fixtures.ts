/**
 * Fixtures for the snapshot compaction handler: tasks and Etcds in wire form, and a runner that calls
 * one handler phase with the in-memory ObjectReader and Jobs.
 */
import type { V1Job } from "@kubernetes/client-node";
import { Effect, Layer, Result } from "effect";
import { decodeEtcdOpsTask, type EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import { MemoryObjects, memoryObjectReaderLayer } from "../../../src/etcd/object-reader-memory.ts";
import {
  makeOnDemandSnapshotCompactionHandler,
  type OnDemandSnapshotCompactionHandlerOptions,
} from "../../../src/etcd/on-demand-snapshot-compaction/handler.ts";
import { Jobs, type JobsShape } from "../../../src/etcd/on-demand-snapshot-compaction/jobs.ts";
import { MemoryJobs, makeMemoryJobs } from "../../../src/etcd/on-demand-snapshot-compaction/jobs-memory.ts";
import { Resources } from "../../../src/etcd/services.ts";
import type { PhaseOutcome } from "../../../src/machine/types.ts";
import { etcdName, etcdObject, namespace } from "../support/fixtures.ts";
import { memberContext } from "../support/member-context.ts";

export { etcdName, namespace };
export const taskName = "compact-1";
export const taskUid = "task-uid-compact-1";
export const jobName = `${taskName}-compact`;

type Json = Record<string, unknown>;

export interface CompactionTaskOptions {
  readonly name?: string;
  readonly uid?: string;
  /** null: no `etcdName` key at all. */
  readonly etcdName?: string | null;
  readonly image?: string;
  readonly timeoutSeconds?: number;
}

/** A task as the handler receives it (decoded, CRD defaults applied). */
export const compactionTask = (options: CompactionTaskOptions = {}): EtcdOpsTask => {
  const etcd = options.etcdName === undefined ? etcdName : options.etcdName;
  const result = decodeEtcdOpsTask({
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "EtcdOpsTask",
    metadata: {
      name: options.name ?? taskName,
      namespace,
      uid: options.uid ?? taskUid,
      resourceVersion: "1",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:00Z",
    },
    spec: {
      ...(etcd === null ? {} : { etcdName: etcd }),
      config: {
        onDemandSnapshotCompaction: {
          ...(options.image === undefined ? {} : { image: options.image }),
          ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
        },
      },
    },
  });
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};

export interface StoreOptions {
  readonly provider?: string;
  readonly prefix?: string;
  readonly container?: string;
  readonly endpointOverride?: string;
  readonly secretRef?: string;
}

/** An Etcd whose `spec.backup.store` is `store` (undefined: backup not enabled). */
export const etcdWithStore = (
  store: StoreOptions | undefined,
  ready: "True" | "False" | "none" = "True",
): Json => {
  const etcd = etcdObject({ backup: store !== undefined, ready });
  if (store === undefined) return etcd;
  const spec = etcd.spec as { backup: Json };
  spec.backup.store = {
    prefix: store.prefix ?? "test-prefix",
    ...(store.provider === undefined ? {} : { provider: store.provider }),
    ...(store.container === undefined ? {} : { container: store.container }),
    ...(store.endpointOverride === undefined ? {} : { endpointOverride: store.endpointOverride }),
    ...(store.secretRef === undefined ? {} : { secretRef: { name: store.secretRef } }),
  };
  return etcd;
};

export const s3Store: StoreOptions = {
  provider: "aws",
  prefix: "shoot--dev--x/etcd-main",
  container: "backup-bucket",
  secretRef: "etcd-backup",
};

/** Objects in memory: the Etcd (wire form) and any Secrets. */
export const world = (etcd?: Json, ...secrets: ReadonlyArray<Json>): MemoryObjects => {
  const objects = new MemoryObjects();
  if (etcd !== undefined) objects.put(Resources.etcd, etcd);
  for (const secret of secrets) objects.put(Resources.secret, secret);
  return objects;
};

/** A Job of `jobName` as an earlier task of the same name (or someone else) left it. */
export const existingJob = (labels: Readonly<Record<string, string>>, finalizers: string[] = []): V1Job => ({
  apiVersion: "batch/v1",
  kind: "Job",
  metadata: { name: jobName, namespace, labels: { ...labels }, finalizers },
  spec: { template: { spec: { containers: [{ name: "x", image: "x" }], restartPolicy: "Never" } } },
});

export interface RunOptions extends OnDemandSnapshotCompactionHandlerOptions {
  /** Wraps the memory Jobs (to script a race, say). */
  readonly jobsShape?: (memory: JobsShape) => JobsShape;
}

export const run = (
  phase: "admit" | "execute" | "cleanup",
  task: EtcdOpsTask,
  objects: MemoryObjects,
  jobs: MemoryJobs,
  options: RunOptions = {},
): Promise<PhaseOutcome> => {
  const { jobsShape, ...handlerOptions } = options;
  const handler = makeOnDemandSnapshotCompactionHandler(handlerOptions);
  const memory = makeMemoryJobs(jobs);
  const layer = Layer.mergeAll(
    memoryObjectReaderLayer(objects),
    Layer.succeed(Jobs, jobsShape === undefined ? memory : jobsShape(memory)),
  );
  return Effect.runPromise(
    handler[phase](task, memberContext("onDemandSnapshotCompaction", task, { phase })).pipe(
      Effect.provide(layer),
    ),
  );
};

export { MemoryJobs };
