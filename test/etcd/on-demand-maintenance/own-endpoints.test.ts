/**
 * Security finding 5 (issue 16): defragmentation talks only to the Etcd's own client endpoints. A
 * member list is etcd's answer, and etcd's configuration decides what it says; a URL in it that is not
 * one of the Etcd's own pods (loopback, link-local, any other host) is never called.
 */
import { Result } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { decodeEtcd } from "../../../src/etcd/api/etcd.ts";
import { isOwnMemberUrl } from "../../../src/etcd/on-demand-maintenance/endpoint.ts";
import { type FakeGateway, ok, startFakeGateway } from "./fake-gateway.ts";
import { etcdObject, host, run, taskOf, world } from "./support.ts";

let fake: FakeGateway | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const memberHost = (index: number) => `test-etcd-${index}.test-etcd-peer.ns.svc`;

/** A three-member cluster whose members advertise `urls(index, port)`; every request is recorded. */
const cluster = async (urls: (index: number, port: number) => string[]) => {
  const gateway = await startFakeGateway({
    "/v3/cluster/member/list": () =>
      ok({
        members: [0, 1, 2].map((index) => ({
          ID: String(100 + index),
          name: `test-etcd-${index}`,
          clientURLs: urls(index, gateway.port),
        })),
      }),
  });
  fake = gateway;
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
  const defragmented = gateway.calls
    .filter((call) => call.path === "/v3/maintenance/defragment")
    .map((call) => call.host);
  return { outcome, defragmented, gateway };
};

describe("defragmentation reaches only the Etcd's own members (finding 5)", () => {
  it.each([
    ["loopback", (port: number) => `http://127.0.0.1:${port}`],
    ["link-local", (port: number) => `http://169.254.169.254:${port}`],
    ["another host", (port: number) => `http://metadata.internal.example:${port}`],
    ["another Etcd's pod", (port: number) => `http://other-0.other-peer.ns.svc:${port}`],
  ])("a member advertising %s only → failed (ERR_MEMBER_LIST), nobody defragmented", async (_, foreign) => {
    const { outcome, defragmented } = await cluster((index, port) =>
      index === 1 ? [foreign(port)] : [`http://${memberHost(index)}:${port}`],
    );
    expect(outcome).toMatchObject({
      kind: "failed",
      description: "Failed to list etcd members",
      error: { code: "ERR_MEMBER_LIST" },
    });
    const cause = outcome.kind === "failed" ? outcome.error.cause : "";
    expect(cause).toContain("member test-etcd-1 (101) advertises no client URL of Etcd test-etcd");
    expect(cause).toContain("expected http://test-etcd-<ordinal>.test-etcd-peer.ns[.svc]:");
    expect(defragmented).toEqual([]);
  });

  it("a member advertising a foreign URL beside its own is reached at its own", async () => {
    const { outcome, defragmented, gateway } = await cluster((index, port) => [
      `http://127.0.0.1:${port}`,
      `http://${memberHost(index)}:${port}`,
    ]);
    expect(outcome.kind).toBe("completed");
    expect(defragmented).toEqual([0, 1, 2].map((index) => `${memberHost(index)}:${gateway.port}`));
  });

  it("what a member advertises is echoed into the cause at a bounded length", async () => {
    const { outcome } = await cluster((index, port) =>
      index === 0
        ? Array.from({ length: 200 }, (_, i) => `http://${"h".repeat(200)}${i}.example:${port}`)
        : [`http://${memberHost(index)}:${port}`],
    );
    expect(outcome.kind).toBe("failed");
    expect(outcome.kind === "failed" ? outcome.error.cause.length : 0).toBeLessThan(600);
  });

  it("own: the Etcd's pods under its peer Service, its client port and scheme, nothing else", () => {
    const decoded = decodeEtcd(etcdObject({ clientPort: 2379 }));
    if (Result.isFailure(decoded)) throw new Error(decoded.failure.message);
    const etcd = decoded.success;
    const client = { url: "http://test-etcd-client.ns:2379", timeoutMs: 1000 };
    const own = (url: string) => isOwnMemberUrl(etcd, client, url);
    expect(
      [
        "http://test-etcd-0.test-etcd-peer.ns.svc:2379",
        "http://test-etcd-12.test-etcd-peer.ns:2379",
        "http://test-etcd-2.test-etcd-peer.ns.svc.cluster.local:2379",
        "http://test-etcd-2.test-etcd-peer.ns.svc:2379/",
      ].map(own),
    ).toEqual([true, true, true, true]);
    expect(
      [
        "http://127.0.0.1:2379",
        "http://[::1]:2379",
        "http://169.254.169.254:2379",
        "https://test-etcd-0.test-etcd-peer.ns.svc:2379",
        "http://test-etcd-0.test-etcd-peer.ns.svc:2380",
        "http://test-etcd-0.test-etcd-peer.other.svc:2379",
        "http://test-etcd-x-0.test-etcd-x-peer.ns.svc:2379",
        "http://user:pw@test-etcd-0.test-etcd-peer.ns.svc:2379",
        "http://test-etcd-0.test-etcd-peer.ns.svc:2379/v3/x",
        "http://test-etcd-0.test-etcd-peer.ns.svc.evil.example.:2379",
        "not a url",
      ].map(own),
    ).toEqual(Array.from({ length: 11 }, () => false));
  });
});
