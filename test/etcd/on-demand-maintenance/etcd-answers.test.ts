/**
 * What etcd's answers mean for the task, with a scripted gateway on 127.0.0.1 for the answers a healthy
 * single etcd does not give: etcd errors (final, or transient and retried), hangs, a malformed answer,
 * a bad `--resolve` rule, and a cluster of several members each defragmented at its own URL.
 */
import { Result } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { decodeEtcd } from "../../../src/etcd/api/etcd.ts";
import { defragmentPlan } from "../../../src/etcd/on-demand-maintenance/endpoint.ts";
import { etcdError, type FakeGateway, ok, type Route, startFakeGateway } from "./fake-gateway.ts";
import { etcdObject, host, run, taskOf, world } from "./support.ts";

let fake: FakeGateway | undefined;
const decodedEtcd = () => {
  const decoded = decodeEtcd(etcdObject({ clientPort: 1 }));
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message);
  return decoded.success;
};

const serve = async (routes: Readonly<Record<string, Route>> = {}) => {
  fake = await startFakeGateway(routes);
  return fake;
};
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const both = taskOf({ compaction: { physical: true }, defragmentation: true });
const execute = (gateway: FakeGateway, options: Parameters<typeof run>[3] = {}) =>
  run("execute", both, world([["etcd", etcdObject({ clientPort: gateway.port })]]), options);

describe("the calls", () => {
  it("status, revision, compaction to that revision, member list, status/defragment/status", async () => {
    const gateway = await serve();
    expect(await execute(gateway)).toEqual({
      kind: "completed",
      description:
        "Compacted to revision 42 (physical); defragmented 1 member(s): test-etcd-0 db size 2.0 MiB → 2.0 MiB",
    });
    expect(gateway.calls.map((call) => call.path)).toEqual([
      "/v3/maintenance/status",
      "/v3/kv/range",
      "/v3/kv/compaction",
      "/v3/maintenance/status",
      "/v3/cluster/member/list",
      "/v3/maintenance/status",
      "/v3/maintenance/defragment",
      "/v3/maintenance/status",
    ]);
    expect(gateway.calls.find((call) => call.path === "/v3/kv/compaction")?.body).toEqual({
      revision: "42",
      physical: true,
    });
    expect(gateway.calls.find((call) => call.path === "/v3/kv/range")?.body).toEqual({
      key: "AA==",
      count_only: true,
    });
    // One member: defragmented through the client Service, whatever URL it advertises.
    expect(new Set(gateway.calls.map((call) => call.host))).toEqual(new Set([`${host}:${gateway.port}`]));
  });

  it("compaction without `physical` sends physical: false", async () => {
    const gateway = await serve();
    const outcome = await run(
      "execute",
      taskOf({ compaction: {} }),
      world([["etcd", etcdObject({ clientPort: gateway.port })]]),
    );
    expect(outcome).toEqual({
      kind: "completed",
      description: "Compacted to revision 42; db size 2.0 MiB, in use 1.0 MiB → 1.0 MiB",
    });
    expect(gateway.calls.find((call) => call.path === "/v3/kv/compaction")?.body).toEqual({
      revision: "42",
      physical: false,
    });
    expect(gateway.calls.some((call) => call.path === "/v3/maintenance/defragment")).toBe(false);
  });
});

describe("etcd answers with an error", () => {
  it("compaction refused → failed with ERR_COMPACTION and etcd's message as the cause", async () => {
    const gateway = await serve({
      "/v3/kv/compaction": () => etcdError(403, 7, "etcdserver: permission denied"),
    });
    expect(await execute(gateway)).toEqual({
      kind: "failed",
      description: "Failed to compact etcd",
      error: {
        code: "ERR_COMPACTION",
        message: "failed to compact etcd to revision 42",
        cause: "etcdserver: permission denied",
      },
    });
    expect(gateway.calls.some((call) => call.path === "/v3/maintenance/defragment")).toBe(false);
  });

  it("already compacted → success with a note", async () => {
    const gateway = await serve({
      "/v3/kv/compaction": () => etcdError(400, 11, "etcdserver: mvcc: required revision has been compacted"),
    });
    expect(await execute(gateway)).toMatchObject({
      kind: "completed",
      description: expect.stringMatching(/^Revision 42 was already compacted; defragmented 1 member\(s\)/),
    });
  });

  it("no leader (gRPC Unavailable) → retry with ERR_COMPACTION", async () => {
    const gateway = await serve({
      "/v3/kv/compaction": () => etcdError(503, 14, "etcdserver: no leader"),
    });
    expect(await execute(gateway)).toEqual({
      kind: "retry",
      description: "Failed to compact etcd",
      error: {
        code: "ERR_COMPACTION",
        message: "failed to compact etcd to revision 42",
        cause: "etcdserver: no leader",
      },
    });
  });

  it("defragmentation refused → failed with ERR_DEFRAGMENTATION naming the member", async () => {
    const gateway = await serve({
      "/v3/maintenance/defragment": () => etcdError(500, 2, "etcdserver: defragment failed: disk full"),
    });
    expect(await execute(gateway)).toEqual({
      kind: "failed",
      description: "Failed to defragment etcd member",
      error: {
        code: "ERR_DEFRAGMENTATION",
        message: `failed to defragment etcd member test-etcd-0 (11) at http://${host}:${gateway.port}`,
        cause: "etcdserver: defragment failed: disk full",
      },
    });
  });

  it("status answered with an error → failed with ERR_ETCD_STATUS", async () => {
    const gateway = await serve({ "/v3/maintenance/status": () => etcdError(404, 5, "Not Found") });
    expect(await execute(gateway)).toEqual({
      kind: "failed",
      description: "Failed to read etcd status",
      error: { code: "ERR_ETCD_STATUS", message: "failed to read etcd status", cause: "Not Found" },
    });
  });

  it("a malformed status → failed with ERR_ETCD_STATUS", async () => {
    const gateway = await serve({ "/v3/maintenance/status": () => ok({ dbSize: "many" }) });
    const outcome = await execute(gateway);
    expect(outcome).toMatchObject({
      kind: "failed",
      error: { code: "ERR_ETCD_STATUS", cause: expect.stringContaining("dbSize") },
    });
  });
});

describe("no answer → retry", () => {
  it("a call that does not answer within the timeout → retry with ERR_ETCD_UNREACHABLE", async () => {
    const gateway = await serve({ "/v3/maintenance/defragment": () => "hang" });
    const started = Date.now();
    const outcome = await execute(gateway, { timeoutMs: () => 300 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(outcome).toEqual({
      kind: "retry",
      description: "Failed to reach etcd",
      error: {
        code: "ERR_ETCD_UNREACHABLE",
        message: "failed to reach etcd",
        cause: `Post "http://${host}:${gateway.port}/v3/maintenance/defragment": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      },
    });
  });

  it("a DNS name that does not resolve (no --resolve rule) → retry with ERR_ETCD_UNREACHABLE", async () => {
    const gateway = await serve();
    const outcome = await execute(gateway, { resolve: [] });
    expect(outcome).toMatchObject({ kind: "retry", error: { code: "ERR_ETCD_UNREACHABLE" } });
    expect(gateway.calls).toEqual([]);
  });

  it("a --resolve rule whose address is not an IP → retry with ERR_CREATE_HTTP_REQUEST", async () => {
    const gateway = await serve();
    const outcome = await execute(gateway, { resolve: [{ host, port: "*", address: "localhost" }] });
    expect(outcome).toEqual({
      kind: "retry",
      description: "Failed to create HTTP request",
      error: {
        code: "ERR_CREATE_HTTP_REQUEST",
        message: "failed to create HTTP request",
        cause: `resolve override for ${host}: "localhost" is not an IP address`,
      },
    });
  });
});

describe("several members: each is defragmented at its own client URL, one at a time", () => {
  const memberHost = (index: number) => `test-etcd-${index}.test-etcd-peer.ns.svc`;

  it("defragments every voting member through its --resolve rule, skipping learners", async () => {
    const defragmented = new Set<string>();
    const gateway = await serve({
      "/v3/cluster/member/list": () =>
        ok({
          members: [0, 1, 2].map((index) => ({
            ID: String(100 + index),
            name: `test-etcd-${index}`,
            clientURLs: [`http://${memberHost(index)}:${fake?.port}`],
            ...(index === 2 ? { isLearner: true } : {}),
          })),
        }),
      "/v3/maintenance/defragment": (call) => {
        defragmented.add(call.host ?? "");
        return ok({});
      },
      "/v3/maintenance/status": (call) =>
        ok({ dbSize: defragmented.has(call.host ?? "") ? "1048576" : "4194304", dbSizeInUse: "1048576" }),
    });
    const resolve = [0, 1, 2, -1].map((index) => ({
      host: index < 0 ? host : memberHost(index),
      port: "*" as const,
      address: "127.0.0.1",
    }));
    const outcome = await run(
      "execute",
      taskOf({ defragmentation: true }),
      world([["etcd", etcdObject({ clientPort: gateway.port })]]),
      { resolve },
    );
    expect(outcome).toEqual({
      kind: "completed",
      description:
        "Defragmented 2 member(s), skipped 1 learner(s): " +
        "test-etcd-0 db size 4.0 MiB → 1.0 MiB, test-etcd-1 db size 4.0 MiB → 1.0 MiB",
    });
    expect(
      gateway.calls.filter((call) => call.path !== "/v3/cluster/member/list").map((c) => [c.path, c.host]),
    ).toEqual([
      ["/v3/maintenance/status", `${memberHost(0)}:${gateway.port}`],
      ["/v3/maintenance/defragment", `${memberHost(0)}:${gateway.port}`],
      ["/v3/maintenance/status", `${memberHost(0)}:${gateway.port}`],
      ["/v3/maintenance/status", `${memberHost(1)}:${gateway.port}`],
      ["/v3/maintenance/defragment", `${memberHost(1)}:${gateway.port}`],
      ["/v3/maintenance/status", `${memberHost(1)}:${gateway.port}`],
    ]);
  });

  it("a member that has not started (no client URL) → retry with ERR_MEMBER_LIST", async () => {
    const gateway = await serve({
      "/v3/cluster/member/list": () =>
        ok({ members: [{ ID: "100", name: "test-etcd-0", clientURLs: ["http://x:1"] }, { ID: "101" }] }),
    });
    const outcome = await execute(gateway);
    expect(outcome).toEqual({
      kind: "retry",
      description: "Failed to list etcd members",
      error: {
        code: "ERR_MEMBER_LIST",
        message: "failed to list etcd members",
        cause: "member 101 has no client URL (not started yet?)",
      },
    });
    expect(gateway.calls.some((call) => call.path === "/v3/maintenance/defragment")).toBe(false);
  });

  it("defragmentPlan: one member goes through the client endpoint; learners are never targets", () => {
    const client = { url: "http://c:1", timeoutMs: 1000 };
    const member = (id: string, urls: string[], isLearner = false) => ({
      id,
      name: id,
      clientUrls: urls,
      isLearner,
    });
    const noVoter = { verdict: "retry", reason: "the member list has no voting member" };
    expect(defragmentPlan([member("a", ["http://a:1"])], client, decodedEtcd())).toEqual(
      expect.objectContaining({
        success: { targets: [{ member: member("a", ["http://a:1"]), endpoint: client }], learnersSkipped: 0 },
      }),
    );
    expect(defragmentPlan([], client, decodedEtcd())).toEqual(expect.objectContaining({ failure: noVoter }));
    expect(defragmentPlan([member("l", ["http://l:1"], true)], client, decodedEtcd())).toEqual(
      expect.objectContaining({ failure: noVoter }),
    );
  });
});
