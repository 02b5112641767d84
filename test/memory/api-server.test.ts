/**
 * The memory API server keeps the apiserver rules a controller can trip over. Each rule here is one
 * the real kube-apiserver applies to a CRD with a status subresource (the differential test against a
 * real server checks the same histories end to end).
 */
import { describe, expect, it } from "vitest";
import { MemoryApiServer } from "../../src/interpreters/memory/api-server.ts";
import { FakeClock } from "../../src/interpreters/memory/clock.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import { epoch, namespace, taskObject } from "../support/simulation.ts";

const setup = () => {
  const clock = new FakeClock(epoch + 250);
  const server = new MemoryApiServer({
    resource: "etcdopstasks.druid.gardener.cloud",
    now: () => clock.now(),
  });
  const created = server.create(taskObject("t", { etcd: "e1" }));
  if (!created.ok) throw new Error(created.error.message);
  return { clock, server, created: created.value };
};

const meta = (object: JsonObject) => object.metadata as JsonObject;
const get = (server: MemoryApiServer) => {
  const result = server.get(namespace, "t");
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
};

describe("memory API server", () => {
  it("assigns uid, generation 1, a resourceVersion and a whole-second creationTimestamp on create", () => {
    const { created } = setup();
    expect(meta(created).uid).toBeTypeOf("string");
    expect(meta(created).generation).toBe(1);
    expect(meta(created).resourceVersion).toBe("1");
    expect(meta(created).creationTimestamp).toBe("2026-11-22T12:00:00Z");
  });

  it("drops status sent with the object, and ignores status in object patches", () => {
    const { server } = setup();
    server.patch(namespace, "t", { status: { state: "Succeeded" } });
    expect(get(server).status).toBeUndefined();
  });

  it("changes only status through the status subresource, without bumping generation", () => {
    const { server } = setup();
    const result = server.patchStatus(namespace, "t", {
      status: { state: "Pending" },
      metadata: { labels: { a: "b" } },
    });
    expect(result.ok).toBe(true);
    expect(get(server).status).toEqual({ state: "Pending" });
    expect(meta(get(server)).labels).toBeUndefined();
    expect(meta(get(server)).generation).toBe(1);
    expect(meta(get(server)).resourceVersion).toBe("2");
  });

  it("bumps generation on spec changes only", () => {
    const { server } = setup();
    server.patch(namespace, "t", { metadata: { labels: { a: "b" } } });
    expect(meta(get(server)).generation).toBe(1);
    server.patch(namespace, "t", { spec: { etcdName: "e2" } });
    expect(meta(get(server)).generation).toBe(2);
  });

  it("does not bump resourceVersion for a write that changes nothing", () => {
    const { server } = setup();
    server.patch(namespace, "t", { metadata: { labels: { a: "b" } } });
    const before = meta(get(server)).resourceVersion;
    server.patch(namespace, "t", { metadata: { labels: { a: "b" } } });
    expect(meta(get(server)).resourceVersion).toBe(before);
  });

  it("treats metadata.resourceVersion in a patch as a precondition (409 Conflict)", () => {
    const { server, created } = setup();
    server.patch(namespace, "t", { metadata: { labels: { a: "b" } } });
    const stale = server.patch(namespace, "t", {
      metadata: { resourceVersion: meta(created).resourceVersion ?? null, finalizers: ["x"] },
    });
    expect(stale.ok ? undefined : stale.error.code).toBe(409);
  });

  it("replaces arrays whole in a merge patch and removes keys set to null", () => {
    const { server } = setup();
    server.patch(namespace, "t", { metadata: { finalizers: ["a", "b"] } });
    server.patch(namespace, "t", { metadata: { finalizers: ["b"] } });
    expect(meta(get(server)).finalizers).toEqual(["b"]);
    server.patchStatus(namespace, "t", { status: { state: "Pending", startedAt: "x" } });
    server.patchStatus(namespace, "t", { status: { startedAt: null } });
    expect(get(server).status).toEqual({ state: "Pending" });
  });

  it("applies a JSON patch of the status subresource to the whole object, keeping only status", () => {
    const { server, created } = setup();
    const uid = String(meta(created).uid);
    const first = server.jsonPatchStatus(namespace, "t", [
      { op: "test", path: "/metadata/uid", value: uid },
      { op: "add", path: "/status", value: { state: "Pending", startedAt: "x" } },
      { op: "add", path: "/metadata/labels", value: { ignored: "yes" } },
    ]);
    expect(first.ok).toBe(true);
    expect(get(server).status).toEqual({ state: "Pending", startedAt: "x" });
    expect(meta(get(server)).labels).toBeUndefined();
    server.jsonPatchStatus(namespace, "t", [
      { op: "add", path: "/status/state", value: "InProgress" },
      { op: "remove", path: "/status/startedAt" },
    ]);
    expect(get(server).status).toEqual({ state: "InProgress" });
  });

  it("answers 422 with the apiserver's text, and writes nothing, when a JSON patch does not apply", () => {
    const { server } = setup();
    const before = get(server);
    const refusals = [
      [
        { op: "test", path: "/metadata/uid", value: "someone-else" },
        { op: "add", path: "/status", value: {} },
      ],
      [{ op: "add", path: "/status/state", value: "Pending" }],
      [
        { op: "add", path: "/status", value: {} },
        { op: "remove", path: "/status/startedAt" },
      ],
    ] as const;
    for (const operations of refusals) {
      const result = server.jsonPatchStatus(namespace, "t", operations);
      expect(result.ok ? undefined : [result.error.code, result.error.message]).toEqual([
        422,
        "the server rejected our request due to an error in our request",
      ]);
    }
    expect(get(server)).toBe(before);
  });

  it("deletes an object without finalizers at once", () => {
    const { server } = setup();
    expect(server.delete(namespace, "t").ok).toBe(true);
    expect(server.get(namespace, "t").ok).toBe(false);
    expect(server.events.at(-1)?.type).toBe("DELETED");
  });

  it("marks an object with finalizers as deleting, bumping generation once", () => {
    const { server, clock } = setup();
    server.patch(namespace, "t", { metadata: { finalizers: ["a"] } });
    clock.set(epoch + 5_000);
    server.delete(namespace, "t");
    server.delete(namespace, "t");
    expect(meta(get(server)).deletionTimestamp).toBe("2026-11-22T12:00:05Z");
    expect(meta(get(server)).generation).toBe(2);
  });

  it("refuses new finalizers on a deleting object (422) and removes it with its last finalizer", () => {
    const { server } = setup();
    server.patch(namespace, "t", { metadata: { finalizers: ["a"] } });
    server.delete(namespace, "t");
    const refused = server.patch(namespace, "t", { metadata: { finalizers: ["a", "b"] } });
    expect(refused.ok ? undefined : refused.error.code).toBe(422);
    server.patch(namespace, "t", { metadata: { finalizers: [] } });
    expect(server.get(namespace, "t").ok).toBe(false);
  });

  it("answers 409 to a DELETE whose UID precondition names another object", () => {
    const { server } = setup();
    const result = server.delete(namespace, "t", { uid: "someone-else" });
    expect(result.ok ? undefined : result.error.code).toBe(409);
  });

  it("answers 404 for a missing object and 409 AlreadyExists for a duplicate name", () => {
    const { server } = setup();
    const missing = server.patchStatus(namespace, "nope", { status: {} });
    expect(missing.ok ? undefined : missing.error.code).toBe(404);
    const again = server.create(taskObject("t"));
    expect(again.ok ? undefined : again.error.reason).toBe("AlreadyExists");
  });

  it("emits watch events in resourceVersion order", () => {
    const { server } = setup();
    const seen: string[] = [];
    server.watch((event) => seen.push(`${event.type}:${String(meta(event.object).resourceVersion)}`));
    server.patch(namespace, "t", { metadata: { labels: { a: "b" } } });
    server.delete(namespace, "t");
    expect(seen).toEqual(["MODIFIED:2", "DELETED:3"]);
  });
});
