/**
 * The task board hears of a task too large to cache as such: the stub the cache keeps has no spec, so
 * without a look at its mark the board would show "spec: missing" instead of the size and the limit.
 */
import { describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { markOversized } from "../../src/reconcile/oversized-task.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";
import { recordingKind } from "../../src/ui/recording.ts";

describe("recordingKind", () => {
  it("reports a stub of an oversized task with the size and the limit, not a missing spec", () => {
    const seen: TaskFacts[] = [];
    const kind = recordingKind(etcdOpsTaskKind, {
      observeFacts: (facts) => seen.push(facts),
      record: () => {},
    });
    const stub = markOversized(
      {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: {
          name: "big",
          namespace: "default",
          uid: "u-1",
          resourceVersion: "7",
          generation: 1,
          creationTimestamp: "2026-11-25T00:00:00Z",
        },
      },
      { bytes: 1_500_000, limit: 65_536, actionable: true },
    );
    kind.decode(stub);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.tooLarge).toEqual({ bytes: 1_500_000, limit: 65_536, actionable: true });
    expect(seen[0]?.invalid?.join("\n")).toMatch(/about 1,465 KiB .* limit of 64 KiB \(--max-task-bytes\)/);
    expect(seen[0]?.invalid).toHaveLength(1);
  });
});
