/**
 * The description of a completed maintenance task names each defragmented member with its own db size
 * before and after, and stays within the status text cap whatever the members are called.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MaxStatusTextLength } from "../../../src/api/text-cap.ts";
import { describeReport } from "../../../src/etcd/on-demand-maintenance/description.ts";
import { type FakeGateway, ok, type RecordedCall, startFakeGateway } from "./fake-gateway.ts";
import { etcdObject, host, run, taskOf, world } from "./support.ts";

let fake: FakeGateway | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const memberHost = (index: number) => `test-etcd-${index}.test-etcd-peer.ns.svc`;
const MiB = 1024 * 1024;

/**
 * Three members; member i reports (i + 2) MiB before its defragmentation and (i + 1) / 2 MiB after it,
 * so a total or a swapped pair would not match.
 */
const threeMembers = async () => {
  const defragmented = new Set<string>();
  const indexOf = (call: RecordedCall) => [0, 1, 2].find((index) => call.host?.startsWith(memberHost(index)));
  const gateway = await startFakeGateway({
    "/v3/cluster/member/list": () =>
      ok({
        members: [0, 1, 2].map((index) => ({
          ID: String(100 + index),
          name: `test-etcd-${index}`,
          clientURLs: [`http://${memberHost(index)}:${gateway.port}`],
        })),
      }),
    "/v3/maintenance/defragment": (call) => {
      defragmented.add(call.host ?? "");
      return ok({});
    },
    "/v3/maintenance/status": (call) => {
      const index = indexOf(call);
      const size =
        index === undefined
          ? 2 * MiB
          : defragmented.has(call.host ?? "")
            ? ((index + 1) * MiB) / 2
            : (index + 2) * MiB;
      return ok({
        header: { revision: "42" },
        version: "3.6.5",
        dbSize: String(size),
        dbSizeInUse: "1048576",
      });
    },
  });
  fake = gateway;
  const resolve = [0, 1, 2, -1].map((index) => ({
    host: index < 0 ? host : memberHost(index),
    port: "*" as const,
    address: "127.0.0.1",
  }));
  return run(
    "execute",
    taskOf({ compaction: { physical: true }, defragmentation: true }),
    world([["etcd", etcdObject({ clientPort: gateway.port })]]),
    { resolve },
  );
};

describe("the maintenance description", () => {
  it("names each member with its own db size before and after its defragmentation", async () => {
    expect(await threeMembers()).toEqual({
      kind: "completed",
      description:
        "Compacted to revision 42 (physical); defragmented 3 member(s): " +
        "test-etcd-0 db size 2.0 MiB → 512.0 KiB, " +
        "test-etcd-1 db size 3.0 MiB → 1.0 MiB, " +
        "test-etcd-2 db size 4.0 MiB → 1.5 MiB",
    });
  });

  it("stays within the status text cap, each member name echoed at a bounded length", () => {
    const members = Array.from({ length: 20 }, (_, index) => ({
      member: `${"m".repeat(1000)}-${index}`,
      dbSizeBefore: 8 * MiB,
      dbSizeAfter: MiB,
    }));
    const text = describeReport({ defragmentation: { members, learnersSkipped: 0 } });
    expect(text.length).toBeLessThanOrEqual(MaxStatusTextLength);
    expect(text).toMatch(
      /^Defragmented 20 member\(s\): m+… \(\d+ more characters\) db size 8\.0 MiB → 1\.0 MiB, /,
    );
  });
});
