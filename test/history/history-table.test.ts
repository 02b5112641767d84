import { describe, expect, it } from "vitest";
import { historyJson, historyTable } from "../../src/cli/task/history.ts";
import { applyOutcome } from "../../src/history/history-entry.ts";

const hour = 3600_000;
const now = Date.UTC(2026, 10, 26, 12);
const snapshot = applyOutcome(
  applyOutcome(undefined, {
    target: "etcd-main",
    type: "onDemandSnapshot",
    state: "Succeeded",
    at: now - 5 * hour,
    durationSeconds: 3.2,
  }),
  {
    target: "etcd-main",
    type: "onDemandSnapshot",
    state: "Failed",
    at: now - hour,
    durationSeconds: 900,
    errorCode: "ERR_SNAPSHOT",
  },
);
const maintenance = applyOutcome(undefined, {
  target: "etcd-main",
  type: "onDemandMaintenance",
  state: "Rejected",
  at: now - 90_000,
  durationSeconds: 0,
  errorCode: "ERR_DUPLICATE_TASK",
});

describe("opstask history prints one row per task type", () => {
  it("last success, last failure, last outcome with its age, duration and error code", () => {
    expect(historyTable([snapshot, maintenance], now, false)).toBe(
      [
        "TYPE                  LAST SUCCESS                    LAST FAILURE                     LAST OUTCOME       DURATION   ERROR CODE",
        "onDemandMaintenance   <none>                          <none>                           Rejected 90s ago   0s         ERR_DUPLICATE_TASK",
        "onDemandSnapshot      2026-11-26T07:00:00Z (5h ago)   2026-11-26T11:00:00Z (60m ago)   Failed 60m ago     15m        ERR_SNAPSHOT",
        "",
      ].join("\n"),
    );
  });

  it("with every target, a TARGET column comes first", () => {
    expect(historyTable([snapshot], now, true).split("\n")[0]).toMatch(/^TARGET +TYPE +LAST SUCCESS/);
  });

  it("-o json gives RFC 3339 times and null for what never happened", () => {
    expect(JSON.parse(historyJson([maintenance]))).toEqual([
      {
        target: "etcd-main",
        type: "onDemandMaintenance",
        lastOutcome: {
          state: "Rejected",
          time: "2026-11-26T11:58:30.000Z",
          durationSeconds: 0,
          errorCode: "ERR_DUPLICATE_TASK",
        },
        lastSuccessTime: null,
        lastFailureTime: null,
      },
    ]);
  });
});
