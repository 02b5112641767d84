/**
 * docs/contract.md §5 rows of the Admit phase that belong to the handler (§8), plus Cleanup. The lifecycle
 * adds `[Operation: Admit, …]` and the state; the handler's outcome carries the description and error.
 */
import { describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import { etcdName, etcdObject, namespace, run, taskOf, world } from "../support/fixtures.ts";

describe("Admit (docs/contract.md §5, §8)", () => {
  it("Etcd not found → failed (Rejected) with ERR_GET_ETCD", async () => {
    const outcome = await run("admit", taskOf(), world());
    expect(outcome).toEqual({
      kind: "failed",
      description: "Etcd object not found",
      error: { code: "ERR_GET_ETCD", message: "etcd object not found", cause: expect.any(String) },
    });
    expect(outcome.kind === "failed" && outcome.error.cause).toMatch(
      /^etcds\.druid\.gardener\.cloud "test-etcd" not found/,
    );
  });

  it.each([
    ["absent", null],
    ["empty", ""],
  ] as const)("etcdName %s → treated as NotFound: failed with ERR_GET_ETCD, no read", async (_, name) => {
    const objects = world([["etcd", etcdObject()]]);
    const outcome = await run("admit", taskOf({ etcdName: name }), objects);
    expect(outcome).toEqual({
      kind: "failed",
      description: "Etcd object not found",
      error: {
        code: "ERR_GET_ETCD",
        message: "etcd object not found",
        cause: 'etcds.druid.gardener.cloud "" not found',
      },
    });
    expect(objects.reads).toEqual([]);
  });

  it("Etcd GET fails for another reason → retry with ERR_GET_ETCD and the API text as cause", async () => {
    const objects = world([["etcd", etcdObject()]]);
    objects.fail(Resources.etcd, namespace, etcdName, 'etcds.druid.gardener.cloud "test-etcd" is forbidden');
    expect(await run("admit", taskOf(), objects)).toEqual({
      kind: "retry",
      description: "Failed to get etcd object",
      error: {
        code: "ERR_GET_ETCD",
        message: "failed to get etcd object",
        cause: 'etcds.druid.gardener.cloud "test-etcd" is forbidden',
      },
    });
  });

  it("spec.backup.store absent → failed with ERR_BACKUP_NOT_ENABLED (checked before readiness)", async () => {
    const objects = world([["etcd", etcdObject({ backup: false, ready: "none" })]]);
    expect(await run("admit", taskOf(), objects)).toEqual({
      kind: "failed",
      description: "Backup is not enabled for etcd",
      error: {
        code: "ERR_BACKUP_NOT_ENABLED",
        message: "backup is not enabled for etcd",
        cause: "backup is not enabled for etcd",
      },
    });
  });

  it.each(["none", "False"] as const)(
    "no Ready=True condition (%s) → failed with ERR_ETCD_NOT_READY",
    async (ready) => {
      const objects = world([["etcd", etcdObject({ ready })]]);
      expect(await run("admit", taskOf(), objects)).toEqual({
        kind: "failed",
        description: "Etcd is not ready",
        error: { code: "ERR_ETCD_NOT_READY", message: "etcd is not ready", cause: "etcd is not ready" },
      });
    },
  );

  it("admit passed → completed 'Admit check passed', reading only the Etcd", async () => {
    const objects = world([["etcd", etcdObject({ tls: {} })]]);
    expect(await run("admit", taskOf(), objects)).toEqual({
      kind: "completed",
      description: "Admit check passed",
    });
    expect(objects.reads).toEqual([{ resource: Resources.etcd, namespace, name: etcdName }]);
  });
});

describe("Cleanup (docs/contract.md §5)", () => {
  it("cleanup of any other task → completed 'Cleanup completed' (nothing to clean, no reads)", async () => {
    const objects = world();
    expect(await run("cleanup", taskOf(), objects)).toEqual({
      kind: "completed",
      description: "Cleanup completed",
    });
    expect(objects.reads).toEqual([]);
  });
});
