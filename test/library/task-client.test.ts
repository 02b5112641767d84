/**
 * Issue 41 point 5: `taskClient` (opstask/testing), a typed client for one kind on a real
 * kube-apiserver: create with the kind's spec type, get and list as records (the decoded task, its
 * status, result and conditions), waitFor a state or a predicate, delete through the finalizer.
 */
import * as Schema from "effect/Schema";
import {
  configUnion,
  defineTaskKind,
  memberHandlers,
  promiseHandler,
  runTaskController,
  type TaskController,
} from "opstask";
import { taskCrd, withDefault } from "opstask/crd";
import { type ControlPlane, startControlPlane, taskClient } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const countKind = defineTaskKind({
  group: "counts.opstask.dev",
  version: "v1",
  kind: "Count",
  plural: "counts",
  spec: Schema.Struct({
    ttlSecondsAfterFinished: Schema.Number.check(Schema.isInt32()).pipe(withDefault(600)),
    config: configUnion({ count: Schema.Struct({ upTo: Schema.Number.check(Schema.isInt32()) }) }),
  }),
  result: Schema.Struct({ total: Schema.Number }),
});
const crd = taskCrd(countKind, { description: "Counts, once." });
const handlers = memberHandlers((task: typeof countKind.schema.Type) => task.spec.config, {
  count: promiseHandler({
    execute: (_task, { config }) =>
      countKind.succeeded({
        description: `Counted to ${config.upTo}`,
        result: { total: (config.upTo * (config.upTo + 1)) / 2 },
      }),
  }),
});

describe("taskClient on a real API server", () => {
  let plane: ControlPlane;
  let controller: TaskController;
  let namespace: string;
  beforeAll(async () => {
    plane = await startControlPlane({ crds: [crd] });
    namespace = await plane.createNamespace("counts");
    controller = await runTaskController({
      kind: countKind,
      handlers,
      kubeConfig: plane.kubeClient(),
      namespace,
      logLevel: "warn",
    });
  }, 300_000);
  afterAll(async () => {
    await controller?.stop();
    await plane?.stop();
  });

  it("creates a task of the kind, waits for it to Succeed and reads its result and conditions", async () => {
    const counts = taskClient(countKind, plane.kubeClient(), { namespace });
    const created = await counts.create({
      metadata: { name: "ten" },
      spec: { config: { count: { upTo: 10 } } },
    });
    expect(created.name).toBe("ten");
    expect(created.task?.spec.ttlSecondsAfterFinished).toBe(600);
    const done = await counts.waitFor("ten", "Succeeded");
    expect(done?.status.lastOperation?.description).toBe("Counted to 10");
    expect(done?.result).toEqual({ total: 55 });
    expect(done?.conditions.map(({ type, status }) => `${type}=${status}`)).toEqual([
      "Succeeded=True",
      "Failed=False",
    ]);
    expect((await counts.list()).map((record) => record.name)).toEqual(["ten"]);
  });

  it("answers undefined for a task that is not there, deletes through the finalizer, and says when there was none", async () => {
    const counts = taskClient(countKind, plane.kubeClient(), { namespace });
    expect(await counts.get("absent")).toBeUndefined();
    // What the CRD refuses, sent as a hand-written manifest could be.
    const refused = await counts.createUnchecked({ metadata: { name: "empty" }, spec: { config: {} } }).then(
      () => "accepted",
      (error: unknown) => String(error),
    );
    expect(refused).toMatch(/spec\.config/);
    await counts.create({ metadata: { name: "gone" }, spec: { config: { count: { upTo: 1 } } } });
    await counts.waitFor("gone", "Succeeded");
    expect(await counts.delete("gone")).toBe(true);
    expect(await counts.waitFor("gone", (record) => record === undefined)).toBeUndefined();
    expect(await counts.delete("gone")).toBe(false);
  });

  it("names what it waited for and the last status when the wait runs out", async () => {
    const counts = taskClient(countKind, plane.kubeClient(), { namespace });
    await expect(counts.waitFor("never", "Succeeded", { timeoutMs: 0 })).rejects.toThrow(
      `Count ${namespace}/never: state Succeeded not reached in 0 ms; last: no such task`,
    );
  });
});
