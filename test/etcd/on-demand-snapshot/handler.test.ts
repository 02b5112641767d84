/**
 * The handler's wiring, with a recording `BackupRestoreHttp`: druid's timeouts by snapshot type, one
 * request per Execute, and a task whose config is not an on-demand snapshot.
 */
import { Effect, Layer } from "effect";
import { describe, expect, it } from "vitest";
import type { EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import { memoryObjectReaderLayer } from "../../../src/etcd/object-reader-memory.ts";
import { onDemandSnapshotHandler } from "../../../src/etcd/on-demand-snapshot/handler.ts";
import { BackupRestoreHttp, type BackupRestoreRequest } from "../../../src/etcd/services.ts";
import { handlerContext } from "../../../src/library/handler-context-of.ts";
import { etcdObject, taskOf, world } from "../support/fixtures.ts";

const recording = (status: number, body: string) => {
  const requests: BackupRestoreRequest[] = [];
  const reads: string[] = [];
  const layer = Layer.succeed(
    BackupRestoreHttp,
    BackupRestoreHttp.of({
      post: (request) =>
        Effect.sync(() => {
          requests.push(request);
          const read = Effect.sync(() => {
            reads.push(request.url);
            return body;
          });
          return { status, body: () => read };
        }),
    }),
  );
  return { requests, reads, layer };
};

const execute = (task: EtcdOpsTask, http: ReturnType<typeof recording>) =>
  Effect.runPromise(
    onDemandSnapshotHandler
      .execute(task, handlerContext())
      .pipe(
        Effect.provide(Layer.mergeAll(memoryObjectReaderLayer(world([["etcd", etcdObject()]])), http.layer)),
      ),
  );

describe("onDemandSnapshotHandler", () => {
  it("full: timeout timeoutSecondsFull (150 s in F-TASK); the body is not read", async () => {
    const http = recording(200, "ignored");
    expect(await execute(taskOf(), http)).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
    expect(http.requests).toEqual([
      {
        url: "http://test-etcd-client.ns:8080/snapshot/full",
        timeoutMs: 150_000,
        servername: "test-etcd-client.ns",
      },
    ]);
    expect(http.reads).toEqual([]);
  });

  it("delta: timeout timeoutSecondsDelta (default 60 s); the body is read", async () => {
    const http = recording(200, "null");
    expect(await execute(taskOf({ type: "delta" }), http)).toEqual({
      kind: "completed",
      description: "Delta snapshot was skipped by backup-restore server",
    });
    expect(http.requests.map((r) => r.timeoutMs)).toEqual([60_000]);
    expect(http.reads).toEqual(["http://test-etcd-client.ns:8080/snapshot/delta"]);
  });

  it("delta with status ≠ 200: the body is not read", async () => {
    const http = recording(202, "null");
    expect(await execute(taskOf({ type: "delta" }), http)).toMatchObject({ kind: "failed" });
    expect(http.reads).toEqual([]);
  });

  it("a task whose config is another member → failed with ERR_UNSUPPORTED_TASK, nothing read or sent", async () => {
    const base = taskOf();
    const task: EtcdOpsTask = {
      ...base,
      spec: {
        ...base.spec,
        config: { kind: "onDemandMaintenance", defragmentation: {}, timeoutSeconds: 300 },
      },
    };
    const http = recording(200, "");
    const objects = world([["etcd", etcdObject()]]);
    const layer = Layer.mergeAll(memoryObjectReaderLayer(objects), http.layer);
    for (const phase of ["admit", "execute"] as const) {
      expect(
        await Effect.runPromise(
          onDemandSnapshotHandler[phase](task, handlerContext({ phase })).pipe(Effect.provide(layer)),
        ),
      ).toEqual({
        kind: "failed",
        description: "Task config is not supported by the on-demand snapshot handler",
        error: {
          code: "ERR_UNSUPPORTED_TASK",
          message: "unsupported task config",
          cause: 'config member "onDemandMaintenance" is not onDemandSnapshot',
        },
      });
    }
    expect(objects.reads).toEqual([]);
    expect(http.requests).toEqual([]);
  });
});
