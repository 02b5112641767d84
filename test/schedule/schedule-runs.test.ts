/**
 * Which cached tasks count as a schedule's runs (src/schedule/schedule-runs.ts), and the cap on active
 * runs (decide.ts): what a task author can make, and what the controller then does with it (issue 35
 * M4, L4).
 */
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import type { KubeObject } from "../../src/kube/object.ts";
import { decide } from "../../src/schedule/decide.ts";
import type { ObservedRun } from "../../src/schedule/observed-run.ts";
import { rfc3339, runName, scheduledTimeAnnotation, scheduleLabel } from "../../src/schedule/run-names.ts";
import { scheduleRuns } from "../../src/schedule/schedule-runs.ts";
import { maxActiveRuns } from "../../src/schedule/schedule-status.ts";

const minute = 60_000;
const now = Date.UTC(2026, 11, 2, 12, 0, 30);
const schedule = { name: "snap", uid: "uid-snap" };

const task = (
  name: string,
  scheduledTime: string,
  options: { owner?: { uid: string; controller?: boolean }; status?: TaskStatus } = {},
): KubeObject & { status?: TaskStatus } => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name,
    namespace: "ns",
    uid: `uid-${name}`,
    resourceVersion: "1",
    labels: { [scheduleLabel]: schedule.name },
    annotations: { [scheduledTimeAnnotation]: scheduledTime },
    ownerReferences: [options.owner ?? { uid: schedule.uid, controller: true }],
  } as KubeObject["metadata"],
  ...(options.status === undefined ? {} : { status: options.status }),
});

const runsOf = (tasks: ReadonlyArray<KubeObject & { status?: TaskStatus }>) =>
  scheduleRuns(schedule, tasks, (one) => (one as { status?: TaskStatus }).status, now);

describe("a task counts as a schedule's run only where it cannot move the schedule (M4)", () => {
  const due = Math.floor(now / minute) * minute;

  it("the controller's own run counts", () => {
    expect(runsOf([task(runName("snap", due), rfc3339(due))]).map((run) => run.name)).toEqual([
      runName("snap", due),
    ]);
  });

  it("a scheduled time in the future is refused, under the name it would have as well", () => {
    const later = Date.UTC(2099, 0, 1);
    expect(runsOf([task("silencer", rfc3339(later)), task(runName("snap", later), rfc3339(later))])).toEqual(
      [],
    );
  });

  it("a name that is not the one derived from its scheduled time is refused", () => {
    expect(runsOf([task("snap-1", rfc3339(due - minute))])).toEqual([]);
  });

  it("an owner reference that is not the controlling one, or to another UID, is refused", () => {
    const name = runName("snap", due);
    expect(
      runsOf([
        task(name, rfc3339(due), { owner: { uid: schedule.uid, controller: false } }),
        task(name, rfc3339(due), { owner: { uid: "other", controller: true } }),
      ]),
    ).toEqual([]);
  });

  it("an outcome in the future keeps the run but not its finishing time", () => {
    const [run] = runsOf([
      task(runName("snap", due), rfc3339(due), {
        status: { state: "Succeeded", lastTransitionTime: "2099-01-01T00:00:00Z" } as TaskStatus,
      }),
    ]);
    expect(run).toMatchObject({ phase: "Succeeded" });
    expect(run?.finishedAt).toBeUndefined();
  });
});

describe("concurrencyPolicy Allow runs at most maxActiveRuns at once (L4)", () => {
  const rules = {
    schedule: "* * * * *",
    suspend: false,
    concurrencyPolicy: "Allow",
    successfulRunsHistoryLimit: 3,
    failedRunsHistoryLimit: 1,
  } as const;
  const active = (count: number): ObservedRun[] =>
    Array.from({ length: count }, (_, i) => {
      const time = Math.floor(now / minute) * minute - (i + 1) * minute;
      return { name: runName("snap", time), scheduledTime: time, phase: "Active", deleting: false };
    });
  const view = () => ({
    name: "snap",
    createdAt: now - 1_000 * minute,
    rules,
    status: { lastScheduleTime: rfc3339(Math.floor(now / minute) * minute - minute) },
  });

  it("with maxActiveRuns active, the due run waits, and the status says why", () => {
    const decision = decide(view(), now, active(maxActiveRuns));
    expect(decision.create).toBeUndefined();
    expect(decision.status.active).toHaveLength(maxActiveRuns);
    expect(decision.status.conditions?.[0]).toMatchObject({ reason: "TooManyActiveRuns" });
    expect(decision.status.conditions?.[0]?.message).toContain(`(${maxActiveRuns})`);
  });

  it("one fewer, and the run is created", () => {
    const decision = decide(view(), now, active(maxActiveRuns - 1));
    expect(decision.create).toBeDefined();
    expect(decision.status.active).toHaveLength(maxActiveRuns);
  });

  it("more active runs than that (made by hand) list only the newest in the status, which stays writable", () => {
    const decision = decide(view(), now, active(maxActiveRuns + 20));
    expect(decision.status.active).toHaveLength(maxActiveRuns);
    expect(decision.status.active?.at(-1)?.name).toBe(active(1)[0]?.name);
  });
});
