import { afterEach, describe, expect, it, vi } from "vitest";
import { compareCodeUnits } from "../../src/code-unit-order.ts";
import { mergeOutcomes, type TaskOutcome } from "../../src/history/history-entry.ts";
import { FaultCounter } from "../../src/interpreters/kubernetes/fault-counter.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";

// `localeCompare`'s first call loads ICU's collation data (~3 MB resident for the controller's life):
// what a controller sorts on its own (history keys, metric labels) is sorted by code units instead.
describe("what the controller sorts is in code-unit order, without the locale", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("compareCodeUnits orders as < does: upper case before lower case", () => {
    expect(["etcd-b", "etcd-B", "etcd-a"].sort(compareCodeUnits)).toEqual(["etcd-B", "etcd-a", "etcd-b"]);
    expect(compareCodeUnits("x", "x")).toBe(0);
  });

  it("history entries are stored in code-unit order of their keys, no locale used", () => {
    const localeCompare = vi.spyOn(String.prototype, "localeCompare");
    const outcome = (target: string, minute: number): TaskOutcome => ({
      target,
      type: "onDemandSnapshot",
      state: "Succeeded",
      at: Date.UTC(2026, 10, 26, 0, minute),
      durationSeconds: 1,
    });
    const { entries } = mergeOutcomes(
      [],
      [outcome("etcd-b", 1), outcome("etcd-B", 2), outcome("etcd-a", 3)],
      { maxEntries: 2, maxBytes: 128 * 1024 },
    );
    expect(entries.map((entry) => entry.target)).toEqual(["etcd-B", "etcd-a"]);
    expect(localeCompare).not.toHaveBeenCalled();
  });

  it("the request and fault counts a scrape reads come sorted without the locale", () => {
    const localeCompare = vi.spyOn(String.prototype, "localeCompare");
    const requests = new RequestCounter();
    for (const verb of ["watch", "get", "patch", "list"] as const) requests.record(verb, 200);
    requests.record("get", 404);
    expect(requests.snapshot().map(({ verb, code }) => `${verb} ${code}`)).toEqual([
      "get 200",
      "get 404",
      "list 200",
      "patch 200",
      "watch 200",
    ]);
    const faults = new FaultCounter();
    faults.record("watch", "expired");
    faults.record("event", "dropped");
    faults.record("event", "retried");
    expect(faults.snapshot().map(({ operation, fault }) => `${operation} ${fault}`)).toEqual([
      "event dropped",
      "event retried",
      "watch expired",
    ]);
    expect(localeCompare).not.toHaveBeenCalled();
  });
});
