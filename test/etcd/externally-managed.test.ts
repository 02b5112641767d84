/**
 * An Etcd with `spec.externallyManagedMemberAddresses` (etcd-druid v0.38.1) has no pods, no client or
 * peer Service and no StatefulSet of druid's. Through the controller's registry: maintenance and
 * quorum-loss recovery Reject its tasks at once with ERR_EXTERNALLY_MANAGED_MEMBERS naming the field;
 * a snapshot compaction needs only the backup store and runs (docs/contract.md §12).
 */
import { Effect, Layer } from "effect";
import { describe, expect, it } from "vitest";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { nodeBackupRestoreHttpLayer } from "../../src/etcd/backup-restore-http-node.ts";
import { nodeEtcdGatewayLayer } from "../../src/etcd/etcd-client.ts";
import { MemoryObjects, memoryObjectReaderLayer } from "../../src/etcd/object-reader-memory.ts";
import { Jobs } from "../../src/etcd/on-demand-snapshot-compaction/jobs.ts";
import { MemoryJobs, makeMemoryJobs } from "../../src/etcd/on-demand-snapshot-compaction/jobs-memory.ts";
import {
  MemoryQuorumCluster,
  memoryQuorumClusterLayer,
} from "../../src/etcd/recover-from-quorum-loss/cluster-memory.ts";
import { etcdHandlers } from "../../src/etcd/registry.ts";
import { Resources } from "../../src/etcd/services.ts";
import type { PhaseOutcome } from "../../src/index.ts";
import { handlerContext } from "../../src/testing.ts";
import { etcdName, etcdObject, namespace, taskOf } from "./support/fixtures.ts";

const members = ["198.18.0.1", "198.18.0.2", "198.18.0.3"];

const task = (config: Record<string, unknown>): EtcdOpsTask => taskOf({ config });

/** An Etcd that lost its quorum, as druid reports it: recovery's own Admit would pass. */
const quorumLost = (externallyManaged: boolean) => {
  const etcd = etcdObject(externallyManaged ? { members } : {});
  return {
    ...etcd,
    spec: { ...(etcd.spec as object), replicas: 3 },
    status: {
      conditions: [
        { type: "Ready", status: "False", reason: "QuorumLost" },
        { type: "BackupReady", status: "True", reason: "BackupSucceeded" },
      ].map((condition) => ({
        ...condition,
        message: "test",
        lastTransitionTime: "2026-01-01T00:00:00Z",
        lastUpdateTime: "2026-01-01T00:00:00Z",
      })),
    },
  };
};

const run = (
  phase: "admit" | "execute",
  subject: EtcdOpsTask,
  etcd: Record<string, unknown>,
  jobs = new MemoryJobs(),
): Promise<PhaseOutcome> => {
  const objects = new MemoryObjects();
  objects.put(Resources.etcd, etcd);
  const layer = Layer.mergeAll(
    memoryObjectReaderLayer(objects),
    memoryQuorumClusterLayer(new MemoryQuorumCluster(etcdName, 0)),
    Layer.succeed(Jobs, makeMemoryJobs(jobs)),
    nodeBackupRestoreHttpLayer(),
    nodeEtcdGatewayLayer(),
  );
  const handler = etcdHandlers[subject.spec.config.kind];
  if (handler === undefined) throw new Error(`no handler for ${subject.spec.config.kind}`);
  return Effect.runPromise(handler[phase](subject, handlerContext({ phase })).pipe(Effect.provide(layer)));
};

const refused = (member: string, why: string) => ({
  kind: "failed",
  description: `${member} is not supported for an Etcd with externally managed members`,
  error: {
    code: "ERR_EXTERNALLY_MANAGED_MEMBERS",
    message: `${member} does not support externally managed members`,
    cause: expect.stringMatching(
      new RegExp(`^spec\\.externallyManagedMemberAddresses is set on etcd ns/test-etcd: ${why}`),
    ),
  },
});

describe("tasks of an Etcd with externally managed members", () => {
  it("recoverFromQuorumLoss: Rejected at Admit, before recovery's own checks, naming the field and what to do", async () => {
    const recovery = task({ recoverFromQuorumLoss: {} });
    expect(await run("admit", recovery, quorumLost(true))).toEqual(
      refused("recoverFromQuorumLoss", "recovery rebuilds etcd-druid's StatefulSet"),
    );
    const outcome = await run("admit", recovery, quorumLost(true));
    expect(outcome.kind === "failed" && outcome.error.cause).toMatch(/recover the members where they run/);
    // The same Etcd with druid's own members reaches recovery's own Admit, which (this context has no
    // record store for the steps' progress) stops at its own first check.
    expect(await run("admit", recovery, quorumLost(false))).toMatchObject({
      kind: "failed",
      error: { code: "ERR_STEPS_UNSUPPORTED" },
    });
  });

  it("onDemandMaintenance: Rejected at Admit", async () => {
    const maintenance = task({ onDemandMaintenance: { defragmentation: {} } });
    expect(await run("admit", maintenance, etcdObject({ members }))).toEqual(
      refused("onDemandMaintenance", "its members have no client Service"),
    );
  });

  it("onDemandSnapshotCompaction: admitted, and its Job is created (it needs only the backup store)", async () => {
    const compaction = task({ onDemandSnapshotCompaction: {} });
    const etcd = etcdObject({ members });
    expect(await run("admit", compaction, etcd)).toEqual({
      kind: "completed",
      description: "Admit check passed",
    });
    const jobs = new MemoryJobs();
    await run("execute", compaction, etcd, jobs);
    expect(jobs.job(namespace, "task-1-compact")).toBeDefined();
  });
});
