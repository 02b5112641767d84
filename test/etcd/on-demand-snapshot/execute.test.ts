/**
 * docs/contract.md §5 rows of the Execute phase without TLS (§8, §9), against a real HTTP stand-in on
 * 127.0.0.1 reached through the `--resolve` override. Timeouts are shortened with the handler's
 * `timeoutMs` option so that DELAY and STALL_BODY finish in well under a second.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import { etcdName, etcdObject, namespace, run, svcHost, taskOf, world } from "../support/fixtures.ts";
import { Mode, refusedPort, type StandIn, startStandIn } from "../support/stand-in.ts";

let standIn: StandIn | undefined;
const serve = async (mode = Mode.ok()) => {
  standIn = await startStandIn({ mode });
  return standIn;
};
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

const executeFailure = {
  kind: "retry",
  description: "Failed to execute HTTP request",
  error: {
    code: "ERR_EXECUTE_HTTP_REQUEST",
    message: "failed to execute HTTP request",
    cause: expect.any(String),
  },
} as const;

describe("Execute: preconditions again, now final as Failed (docs/contract.md §5, §8)", () => {
  it("Etcd gone → failed with ERR_GET_ETCD", async () => {
    const outcome = await run("execute", taskOf(), world());
    expect(outcome).toMatchObject({
      kind: "failed",
      description: "Etcd object not found",
      error: { code: "ERR_GET_ETCD", message: "etcd object not found" },
    });
    expect(outcome.kind === "failed" && outcome.error.cause).toMatch(
      /^etcds\.druid\.gardener\.cloud "test-etcd" not found/,
    );
  });

  it("Etcd GET error → retry with ERR_GET_ETCD", async () => {
    const objects = world([["etcd", etcdObject()]]);
    objects.fail(Resources.etcd, namespace, etcdName, "connection reset by peer");
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "retry",
      description: "Failed to get etcd object",
      error: {
        code: "ERR_GET_ETCD",
        message: "failed to get etcd object",
        cause: "connection reset by peer",
      },
    });
  });

  it("backup disabled meanwhile → failed with ERR_BACKUP_NOT_ENABLED, no request", async () => {
    const server = await serve();
    const objects = world([["etcd", etcdObject({ port: server.port, backup: false })]]);
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Backup is not enabled for etcd",
      error: {
        code: "ERR_BACKUP_NOT_ENABLED",
        message: "backup is not enabled for etcd",
        cause: "backup is not enabled for etcd",
      },
    });
    expect(server.requests).toEqual([]);
  });

  it("not ready meanwhile → failed with ERR_ETCD_NOT_READY, no request", async () => {
    const server = await serve();
    const objects = world([["etcd", etcdObject({ port: server.port, ready: "False" })]]);
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Etcd is not ready",
      error: { code: "ERR_ETCD_NOT_READY", message: "etcd is not ready", cause: "etcd is not ready" },
    });
    expect(server.requests).toEqual([]);
  });
});

describe("Execute: the HTTP call (docs/contract.md §5, §9)", () => {
  it("200 full → completed 'Snapshot created successfully'; POST /snapshot/full to <etcd>-client.<ns>.svc:<port>", async () => {
    const server = await serve(Mode.ok('{"kind":"Full"}'));
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
    expect(server.requests).toEqual([
      expect.objectContaining({
        method: "POST",
        path: "/snapshot/full",
        query: "",
        host: `${svcHost}:${server.port}`,
      }),
    ]);
  });

  it("isFinal → ?final=true on the full snapshot URL", async () => {
    const server = await serve();
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    await run("execute", taskOf({ isFinal: true }), objects);
    expect(server.requests).toEqual([
      expect.objectContaining({ path: "/snapshot/full", query: "final=true" }),
    ]);
  });

  it("200 full with the body withheld (STALL_BODY) → completed at once: the body is never read", async () => {
    const server = await serve(Mode.stallBody());
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    const started = Date.now();
    expect(await run("execute", taskOf(), objects, { timeoutMs: () => 20_000 })).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
    // Far below the 20 s timeout: the call did not wait for the withheld body.
    expect(Date.now() - started).toBeLessThan(10_000);
    // The connection is released when the call ends, not held until the timeout.
    await expect.poll(() => server.openConnections(), { timeout: 1_000, interval: 20 }).toBe(0);
  });

  it("delta: body is exactly null → completed 'Delta snapshot was skipped by backup-restore server'", async () => {
    const server = await serve(Mode.ok("null"));
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    expect(await run("execute", taskOf({ type: "delta" }), objects)).toEqual({
      kind: "completed",
      description: "Delta snapshot was skipped by backup-restore server",
    });
    expect(server.requests).toEqual([
      expect.objectContaining({ method: "POST", path: "/snapshot/delta", query: "" }),
    ]);
  });

  it.each(["null\n", " null", "", '{"kind":"Incr"}'])(
    "delta: any other body (%j) → completed 'Snapshot created successfully' (no trimming)",
    async (body) => {
      const server = await serve(Mode.ok(body));
      const objects = world([["etcd", etcdObject({ port: server.port })]]);
      expect(await run("execute", taskOf({ type: "delta" }), objects)).toEqual({
        kind: "completed",
        description: "Snapshot created successfully",
      });
    },
  );

  it("delta: reading the body fails (STALL_BODY past the timeout) → retry 'Failed to read response body'", async () => {
    const server = await serve(Mode.stallBody());
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    const outcome = await run("execute", taskOf({ type: "delta" }), objects, { timeoutMs: () => 300 });
    expect(outcome).toEqual({
      kind: "retry",
      description: "Failed to read response body",
      error: {
        code: "ERR_CREATE_SNAPSHOT",
        message: "failed to read response body",
        cause: expect.any(String),
      },
    });
    expect(outcome.kind === "retry" && outcome.error?.cause).toContain("Client.Timeout");
  });

  it.each([201, 202, 204, 400, 404, 500, 503])(
    "status %i ≠ 200 → failed 'Failed to create snapshot' with ERR_CREATE_SNAPSHOT",
    async (status) => {
      const server = await serve(Mode.status(status));
      const objects = world([["etcd", etcdObject({ port: server.port })]]);
      expect(await run("execute", taskOf({ type: status === 500 ? "delta" : "full" }), objects)).toEqual({
        kind: "failed",
        description: "Failed to create snapshot",
        error: {
          code: "ERR_CREATE_SNAPSHOT",
          message: "failed to create snapshot",
          cause: `failed to create snapshot, status code: ${status}`,
        },
      });
    },
  );

  it("transport error: connection refused (REFUSE) → retry with ERR_EXECUTE_HTTP_REQUEST", async () => {
    const port = await refusedPort();
    const objects = world([["etcd", etcdObject({ port })]]);
    const outcome = await run("execute", taskOf(), objects);
    expect(outcome).toEqual(executeFailure);
    expect(outcome.kind === "retry" && outcome.error?.cause).toMatch(
      new RegExp(`^Post "http://${svcHost}:${port}/snapshot/full": .*ECONNREFUSED`),
    );
  });

  it("transport error: client timeout before the headers (DELAY) → retry with ERR_EXECUTE_HTTP_REQUEST", async () => {
    const server = await serve(Mode.delay(10_000));
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    const started = Date.now();
    const outcome = await run("execute", taskOf({ type: "delta" }), objects, { timeoutMs: () => 250 });
    // The 250 ms client timeout ended the call, not the server's 10 s delay.
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(outcome).toEqual(executeFailure);
    expect(outcome.kind === "retry" && outcome.error?.cause).toBe(
      `Post "http://${svcHost}:${server.port}/snapshot/delta": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    );
  });

  it("a delay within the timeout is no error", async () => {
    const server = await serve(Mode.delay(100, Mode.ok("{}")));
    const objects = world([["etcd", etcdObject({ port: server.port })]]);
    expect(await run("execute", taskOf({ type: "delta" }), objects, { timeoutMs: () => 2_000 })).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
  });

  it("request object cannot be built (port out of range) → retry with ERR_CREATE_HTTP_REQUEST", async () => {
    const objects = world([["etcd", etcdObject({ port: 70_000 })]]);
    expect(await run("execute", taskOf(), objects)).toEqual({
      kind: "retry",
      description: "Failed to create HTTP request",
      error: {
        code: "ERR_CREATE_HTTP_REQUEST",
        message: "failed to create HTTP request",
        cause: `parse "http://${svcHost}:70000/snapshot/full": invalid URL`,
      },
    });
  });
});
