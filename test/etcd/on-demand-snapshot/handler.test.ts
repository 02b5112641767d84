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
import { etcdObject, taskOf, world } from "../support/fixtures.ts";
import { memberContext } from "../support/member-context.ts";

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
      .execute(task, memberContext("onDemandSnapshot", task))
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
        url: "http://test-etcd-client.ns.svc:8080/snapshot/full",
        timeoutMs: 150_000,
        servername: "test-etcd-client.ns.svc",
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
    expect(http.reads).toEqual(["http://test-etcd-client.ns.svc:8080/snapshot/delta"]);
  });

  it("delta with status ≠ 200: the body is not read", async () => {
    const http = recording(202, "null");
    expect(await execute(taskOf({ type: "delta" }), http)).toMatchObject({ kind: "failed" });
    expect(http.reads).toEqual([]);
  });
});
