/**
 * The etcd handlers are registered with the library's `memberHandlers`: the registry hands each phase
 * its member's config, as the controller calls it (with a plain handler context, no `config`).
 */
import { Effect, Layer } from "effect";
import { describe, expect, it } from "vitest";
import { nodeBackupRestoreHttpLayer } from "../../src/etcd/backup-restore-http-node.ts";
import { nodeEtcdGatewayLayer } from "../../src/etcd/etcd-client.ts";
import { memoryObjectReaderLayer } from "../../src/etcd/object-reader-memory.ts";
import { Jobs } from "../../src/etcd/on-demand-snapshot-compaction/jobs.ts";
import { makeMemoryJobs } from "../../src/etcd/on-demand-snapshot-compaction/jobs-memory.ts";
import {
  MemoryQuorumCluster,
  memoryQuorumClusterLayer,
} from "../../src/etcd/recover-from-quorum-loss/cluster-memory.ts";
import { makeEtcdHandlers } from "../../src/etcd/registry.ts";
import { handlerContext } from "../../src/testing.ts";
import {
  compactionTask,
  etcdWithStore,
  MemoryJobs,
  s3Store,
  world,
} from "./on-demand-snapshot-compaction/fixtures.ts";

describe("the etcd handler registry", () => {
  it("gives a handler its member's config: a compaction task's image is checked at Admit", async () => {
    const handlers = makeEtcdHandlers({ compaction: { defaultImage: "registry.example/etcdbrctl:v1" } });
    const handler = handlers.onDemandSnapshotCompaction;
    if (handler === undefined) throw new Error("no onDemandSnapshotCompaction handler");
    const layer = Layer.mergeAll(
      memoryObjectReaderLayer(world(etcdWithStore(s3Store))),
      Layer.succeed(Jobs, makeMemoryJobs(new MemoryJobs())),
      // What the other members' handlers need (the registry's services); not used here.
      nodeBackupRestoreHttpLayer({ resolve: [] }),
      nodeEtcdGatewayLayer({ resolve: [] }),
      memoryQuorumClusterLayer(new MemoryQuorumCluster("unused", 3)),
    );
    const task = compactionTask({ image: "attacker.example/exfiltrate:latest" });
    const outcome = await Effect.runPromise(
      handler.admit(task, handlerContext({ phase: "admit" })).pipe(Effect.provide(layer)),
    );
    expect(outcome).toMatchObject({
      kind: "failed",
      error: { code: "ERR_COMPACTION_IMAGE_NOT_ALLOWED" },
    });
  });

  it("has a handler for every member of the config union, and only those", () => {
    expect(Object.keys(makeEtcdHandlers()).sort()).toEqual([
      "onDemandMaintenance",
      "onDemandSnapshot",
      "onDemandSnapshotCompaction",
      "recoverFromQuorumLoss",
    ]);
  });
});
