// The wire form of a status write (src/interpreters/status-json-patch.ts); what the apiserver makes of
// it is pinned in test/kube/task-writer.test.ts, and the memory API server's answers in
// test/memory/api-server.test.ts.
import { describe, expect, it } from "vitest";
import { statusJsonPatch } from "../../src/interpreters/status-json-patch.ts";

const base = { uid: "u-1", resourceVersion: "42" };

describe("statusJsonPatch", () => {
  it("first tests the UID, then changes each field on its own: add replaces, null removes", () => {
    expect(
      statusJsonPatch({ ...base, hasStatus: true }, { state: "InProgress", lastErrors: [], startedAt: null }),
    ).toEqual([
      { op: "test", path: "/metadata/uid", value: "u-1" },
      { op: "add", path: "/status/state", value: "InProgress" },
      { op: "add", path: "/status/lastErrors", value: [] },
      { op: "remove", path: "/status/startedAt" },
    ]);
  });

  it("adds the first status whole, and only onto the resourceVersion it was computed from", () => {
    expect(statusJsonPatch({ ...base, hasStatus: false }, { state: "Pending", startedAt: null })).toEqual([
      { op: "test", path: "/metadata/uid", value: "u-1" },
      { op: "test", path: "/metadata/resourceVersion", value: "42" },
      { op: "add", path: "/status", value: { state: "Pending" } },
    ]);
  });

  it("escapes member names as JSON pointers", () => {
    expect(statusJsonPatch({ ...base, hasStatus: true }, { "a/b~c": 1 }).at(-1)).toEqual({
      op: "add",
      path: "/status/a~1b~0c",
      value: 1,
    });
  });
});
