/**
 * Admit and the preconditions Execute checks again (docs/contract.md §5, §8 texts and codes), and Cleanup.
 * Maintenance needs the Etcd to exist and be Ready; unlike a snapshot it does not need backup.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import { type FakeGateway, startFakeGateway } from "./fake-gateway.ts";
import { etcdName, etcdObject, namespace, run, taskOf, world } from "./support.ts";

let fake: FakeGateway | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const maintenance = taskOf({ compaction: { physical: true }, defragmentation: true });

const notFound = {
  kind: "failed",
  description: "Etcd object not found",
  error: {
    code: "ERR_GET_ETCD",
    message: "etcd object not found",
    cause: expect.stringMatching(/^etcds\.druid\.gardener\.cloud "(test-etcd)?" not found/),
  },
} as const;

const notReady = {
  kind: "failed",
  description: "Etcd is not ready",
  error: { code: "ERR_ETCD_NOT_READY", message: "etcd is not ready", cause: "etcd is not ready" },
} as const;

describe("Admit: the Etcd exists and is Ready; backup is not required", () => {
  it("a Ready Etcd without backup → Admit check passed", async () => {
    const outcome = await run("admit", maintenance, world([["etcd", etcdObject({ backup: false })]]));
    expect(outcome).toEqual({ kind: "completed", description: "Admit check passed" });
  });

  it("a Ready Etcd with backup → Admit check passed", async () => {
    const outcome = await run("admit", maintenance, world([["etcd", etcdObject({ backup: true })]]));
    expect(outcome).toEqual({ kind: "completed", description: "Admit check passed" });
  });

  it("Etcd not found → failed (Rejected) with ERR_GET_ETCD", async () => {
    expect(await run("admit", maintenance, world())).toEqual(notFound);
  });

  it("absent etcdName → failed with ERR_GET_ETCD, without a read", async () => {
    const objects = world([["etcd", etcdObject()]]);
    expect(await run("admit", taskOf({ etcdName: null, defragmentation: true }), objects)).toEqual(notFound);
    expect(objects.reads).toEqual([]);
  });

  it("Etcd GET error → retry with ERR_GET_ETCD", async () => {
    const objects = world([["etcd", etcdObject()]]);
    objects.fail(Resources.etcd, namespace, etcdName, "connection reset by peer");
    expect(await run("admit", maintenance, objects)).toEqual({
      kind: "retry",
      description: "Failed to get etcd object",
      error: {
        code: "ERR_GET_ETCD",
        message: "failed to get etcd object",
        cause: "connection reset by peer",
      },
    });
  });

  it.each(["False", "none"] as const)(
    "Ready condition %s → failed with ERR_ETCD_NOT_READY",
    async (ready) => {
      expect(await run("admit", maintenance, world([["etcd", etcdObject({ ready })]]))).toEqual(notReady);
    },
  );
});

describe("Execute checks the preconditions again, now final, before calling etcd", () => {
  it("Etcd gone → failed with ERR_GET_ETCD, no call", async () => {
    fake = await startFakeGateway();
    expect(await run("execute", maintenance, world())).toEqual(notFound);
    expect(fake.calls).toEqual([]);
  });

  it("not ready meanwhile → failed with ERR_ETCD_NOT_READY, no call", async () => {
    fake = await startFakeGateway();
    const objects = world([["etcd", etcdObject({ clientPort: fake.port, ready: "False" })]]);
    expect(await run("execute", maintenance, objects)).toEqual(notReady);
    expect(fake.calls).toEqual([]);
  });
});

describe("an Etcd with externally managed members is refused at once (spec.externallyManagedMemberAddresses)", () => {
  const refused = {
    kind: "failed",
    description: "onDemandMaintenance is not supported for an Etcd with externally managed members",
    error: {
      code: "ERR_EXTERNALLY_MANAGED_MEMBERS",
      message: "onDemandMaintenance does not support externally managed members",
      cause:
        "spec.externallyManagedMemberAddresses is set on etcd ns/test-etcd: its members have no client Service and are not etcd-druid's pods, the only members defragmentation calls; compact and defragment them with etcdctl where they run",
    },
  } as const;

  it("Admit → failed (Rejected), even while the Etcd is not Ready", async () => {
    const members = ["198.18.0.1", "198.18.0.2", "198.18.0.3"];
    expect(await run("admit", maintenance, world([["etcd", etcdObject({ members })]]))).toEqual(refused);
    expect(
      await run("admit", maintenance, world([["etcd", etcdObject({ members, ready: "False" })]])),
    ).toEqual(refused);
  });

  it("Execute → failed, no call to etcd", async () => {
    fake = await startFakeGateway();
    const objects = world([["etcd", etcdObject({ clientPort: fake.port, members: ["127.0.0.1"] })]]);
    expect(await run("execute", maintenance, objects)).toEqual(refused);
    expect(fake.calls).toEqual([]);
  });

  it("an empty list is no externally managed member: Admit check passed", async () => {
    const outcome = await run("admit", maintenance, world([["etcd", etcdObject({ members: [] })]]));
    expect(outcome).toEqual({ kind: "completed", description: "Admit check passed" });
  });
});

describe("Cleanup", () => {
  it("has nothing to undo", async () => {
    expect(await run("cleanup", maintenance, world())).toEqual({
      kind: "completed",
      description: "Cleanup completed",
    });
  });
});
