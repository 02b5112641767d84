/**
 * Admit of the snapshot compaction task: the Etcd exists, has backup enabled and a known store
 * provider; readiness does not matter. Admit reads the Etcd only and never touches Jobs.
 */
import { describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import {
  compactionTask,
  etcdName,
  etcdWithStore,
  MemoryJobs,
  namespace,
  run,
  s3Store,
  world,
} from "./fixtures.ts";

describe("Admit", () => {
  it("Etcd not found → failed (Rejected) with ERR_GET_ETCD and the apiserver's text", async () => {
    expect(await run("admit", compactionTask(), world(), new MemoryJobs())).toEqual({
      kind: "failed",
      description: "Etcd object not found",
      error: {
        code: "ERR_GET_ETCD",
        message: "etcd object not found",
        cause: 'etcds.druid.gardener.cloud "test-etcd" not found',
      },
    });
  });

  it.each([
    ["absent", null],
    ["empty", ""],
  ] as const)("etcdName %s → NotFound without a read", async (_, name) => {
    const objects = world(etcdWithStore(s3Store));
    const outcome = await run("admit", compactionTask({ etcdName: name }), objects, new MemoryJobs());
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_GET_ETCD" } });
    expect(objects.reads).toEqual([]);
  });

  it("Etcd GET fails otherwise → retry with ERR_GET_ETCD and the API text as cause", async () => {
    const objects = world(etcdWithStore(s3Store));
    objects.fail(Resources.etcd, namespace, etcdName, "etcds.druid.gardener.cloud is forbidden");
    expect(await run("admit", compactionTask(), objects, new MemoryJobs())).toEqual({
      kind: "retry",
      description: "Failed to get etcd object",
      error: {
        code: "ERR_GET_ETCD",
        message: "failed to get etcd object",
        cause: "etcds.druid.gardener.cloud is forbidden",
      },
    });
  });

  it("backup not enabled → failed with ERR_BACKUP_NOT_ENABLED", async () => {
    expect(await run("admit", compactionTask(), world(etcdWithStore(undefined)), new MemoryJobs())).toEqual({
      kind: "failed",
      description: "Backup is not enabled for etcd",
      error: {
        code: "ERR_BACKUP_NOT_ENABLED",
        message: "backup is not enabled for etcd",
        cause: "backup is not enabled for etcd",
      },
    });
  });

  it("an unknown store provider → failed with ERR_UNSUPPORTED_STORE_PROVIDER", async () => {
    const objects = world(etcdWithStore({ provider: "floppy" }));
    expect(await run("admit", compactionTask(), objects, new MemoryJobs())).toEqual({
      kind: "failed",
      description: "Backup store provider is not supported",
      error: {
        code: "ERR_UNSUPPORTED_STORE_PROVIDER",
        message: "unsupported backup store provider",
        cause: "unsupported storage provider: 'floppy'",
      },
    });
  });

  it.each(["True", "False", "none"] as const)(
    "backup enabled (Ready %s) → completed 'Admit check passed': compaction needs the store, not etcd",
    async (ready) => {
      const objects = world(etcdWithStore(s3Store, ready));
      const jobs = new MemoryJobs();
      expect(await run("admit", compactionTask(), objects, jobs)).toEqual({
        kind: "completed",
        description: "Admit check passed",
      });
      expect(objects.reads).toEqual([{ resource: Resources.etcd, namespace, name: etcdName }]);
      expect(jobs.calls).toEqual([]);
    },
  );
});
