/** The duplicate-task cause names the kind with the right article: druid's "an EtcdOpsTask", a library kind's "a CacheFlush". */
import { describe, expect, it } from "vitest";
import { lifecycleErrors } from "../../src/machine/descriptions.ts";
import type { PeerTask } from "../../src/machine/types.ts";

const peer: PeerTask = { name: "first", uid: "u1", createdAt: 0, state: "InProgress", deleting: false };

describe("ERR_DUPLICATE_TASK cause", () => {
  it.each([
    ["EtcdOpsTask", "etcd", "an EtcdOpsTask for etcd default/e1 is already present (task: first)"],
    ["CacheFlush", "cache", "a CacheFlush for cache default/e1 is already present (task: first)"],
    ["Upgrade", "cluster", "an Upgrade for cluster default/e1 is already present (task: first)"],
  ])("%s", (kind, group, cause) => {
    expect(lifecycleErrors.duplicate({ kind, group }, "default", "e1", peer).cause).toBe(cause);
  });
});
