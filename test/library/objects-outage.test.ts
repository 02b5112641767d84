/**
 * An API outage met through `context.objects.get` is not a handler defect: `promiseHandler` answers it
 * as a retry with ERR_API_UNAVAILABLE and backoff, however long it lasts, so the defect limit (issue 22
 * point 6) never fails a task because the API server was away. Other rejections still are defects.
 */
import { describe, expect, it } from "vitest";
import { ApiUnavailableCode } from "../../src/advanced.ts";
import { completed, memberHandlers, ObjectsUnavailable, promiseHandler } from "../../src/index.ts";
import { ApiCallError, type KubeClient } from "../../src/kube/kube-client.ts";
import { kubeObjectGetter } from "../../src/runtime/handler-context-kube.ts";
import { simulate } from "../../src/testing.ts";
import { type Chore, choreKind } from "./new-kind/chore-kind.ts";

const rooms = { group: "", version: "v1", plural: "configmaps" } as const;
const chore = {
  metadata: { name: "a" },
  spec: { ttlSecondsAfterFinished: 86_400, config: { sweep: { room: "hall" } } },
};

const sweepReadingItsRoom = () =>
  memberHandlers((task: Chore) => task.spec.config, {
    sweep: promiseHandler({
      execute: async (_task, { config, objects }) => {
        const room = await objects.get(rooms, "default", config.room);
        return completed(room === undefined ? "No such room" : "Swept");
      },
    }),
    ping: promiseHandler({ execute: () => completed("Pinged") }),
  });

/** Runs the simulation for `ms` of fake time, letting each asynchronous call settle on the way. */
const runFor = async (sim: ReturnType<typeof simulate<Chore>>, ms: number) => {
  for (let elapsed = 0; elapsed < ms; elapsed += 1_000) {
    await sim.settle();
    sim.advance(1_000);
  }
  await sim.settle();
};

describe("an API outage during context.objects.get", () => {
  it("is retried with ERR_API_UNAVAILABLE past the defect limit, and the task Succeeds once the API is back", async () => {
    const sim = simulate({ kind: choreKind, handlers: sweepReadingItsRoom(), handlerDefectLimit: 2 });
    const outage = sim.objects.outage();
    sim.create(chore);
    sim.run();
    await runFor(sim, 120_000);
    const calls = sim.calls("a").filter((call) => call.phase === "execute").length;
    expect(calls).toBeGreaterThan(2);
    expect(sim.state("a")).toBe("InProgress");
    expect(sim.status("a")?.lastErrors?.at(-1)?.code).toBe(ApiUnavailableCode);
    outage.end();
    await runFor(sim, 60_000);
    expect(sim.state("a")).toBe("Succeeded");
    await sim.dispose();
  });

  it("is one kind of rejection only: any other stays a handler defect and fails the task at its limit", async () => {
    const forbidden = memberHandlers((task: Chore) => task.spec.config, {
      sweep: promiseHandler({
        execute: () => Promise.reject(new Error("reading configmaps/default/hall failed: forbidden")),
      }),
      ping: promiseHandler({ execute: () => completed("Pinged") }),
    });
    const sim = simulate({ kind: choreKind, handlers: forbidden, handlerDefectLimit: 2 });
    sim.create(chore);
    sim.run();
    await runFor(sim, 60_000);
    expect(sim.state("a")).toBe("Failed");
    expect(sim.status("a")?.lastErrors?.at(-1)?.code).toBe("ERR_HANDLER_DEFECT");
    await sim.dispose();
  });

  it("rejects with ObjectsUnavailable, which names the object", async () => {
    const sim = simulate({ kind: choreKind, handlers: sweepReadingItsRoom() });
    sim.objects.outage("connection refused");
    const read = sim.objects.get(rooms, "default", "hall");
    await expect(read).rejects.toBeInstanceOf(ObjectsUnavailable);
    await expect(read).rejects.toThrow(/configmaps\/default\/hall failed: connection refused/);
    await sim.dispose();
  });
});

describe("the cluster's object reader", () => {
  const answering = (status: number): KubeClient =>
    ({
      _tag: "KubeClient",
      server: "https://127.0.0.1:1",
      request: () => Promise.reject(new ApiCallError(status, `answered ${status}`)),
    }) as unknown as KubeClient;
  const read = (status: number) => kubeObjectGetter(answering(status)).get(rooms, "default", "hall");

  it("rejects with ObjectsUnavailable when the API server did not answer, throttled or failed (0, 429, 5xx)", async () => {
    for (const status of [0, 429, 500, 503])
      await expect(read(status)).rejects.toBeInstanceOf(ObjectsUnavailable);
  });

  it("rejects with a plain Error for an answer retrying cannot change (403), and reads 404 as absent", async () => {
    await expect(read(403)).rejects.not.toBeInstanceOf(ObjectsUnavailable);
    await expect(read(403)).rejects.toThrow(
      /reading \/api\/v1\/namespaces\/default\/configmaps\/hall failed/,
    );
    await expect(read(404)).resolves.toBeUndefined();
  });
});
