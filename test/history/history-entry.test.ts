import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  applyOutcome,
  decodeEntries,
  encodeEntries,
  type HistoryEntry,
  historyLimitsOf,
  mergeOutcomes,
  type TaskOutcome,
  withinLimits,
} from "../../src/history/history-entry.ts";

const at = (minute: number) => Date.UTC(2026, 10, 26, 0, minute);
const outcome = (
  minute: number,
  state: TaskOutcome["state"],
  extra: Partial<TaskOutcome> = {},
): TaskOutcome => ({
  target: "etcd-main",
  type: "onDemandSnapshot",
  state,
  at: at(minute),
  durationSeconds: 2,
  ...extra,
});
const limits = { maxEntries: 200, maxBytes: 128 * 1024 };

describe("an entry keeps the last outcome and the last success and failure times", () => {
  it("a success, then a failure: last outcome Failed, both times kept", () => {
    const entry = applyOutcome(
      applyOutcome(undefined, outcome(1, "Succeeded")),
      outcome(2, "Failed", { errorCode: "ERR_X" }),
    );
    expect(entry).toEqual({
      target: "etcd-main",
      type: "onDemandSnapshot",
      last: { state: "Failed", at: at(2), durationSeconds: 2, errorCode: "ERR_X" },
      lastSuccessAt: at(1),
      lastFailureAt: at(2),
    });
  });

  it("a Rejected task is an outcome, not a failure", () => {
    const entry = applyOutcome(applyOutcome(undefined, outcome(1, "Failed")), outcome(2, "Rejected"));
    expect(entry.last.state).toBe("Rejected");
    expect(entry.lastFailureAt).toBe(at(1));
    expect(entry.lastSuccessAt).toBeUndefined();
  });

  it("applying an outcome twice, or an older one after a newer, changes nothing (retries converge)", () => {
    const once = applyOutcome(applyOutcome(undefined, outcome(1, "Succeeded")), outcome(3, "Failed"));
    expect(applyOutcome(once, outcome(3, "Failed"))).toEqual(once);
    const reordered = applyOutcome(applyOutcome(undefined, outcome(3, "Failed")), outcome(1, "Succeeded"));
    expect(reordered).toEqual(once);
  });
});

describe("a namespace's history is bounded", () => {
  const many = (count: number, state: TaskOutcome["state"], from = 0) =>
    Array.from({ length: count }, (_, i) => outcome(from + i, state, { target: `etcd-${state}-${i}` }));

  it("beyond maxEntries, never-run targets (only Rejected) go before real ones, oldest first", () => {
    const real = many(3, "Succeeded");
    const invented = many(5, "Rejected", 10);
    const { entries, evicted } = mergeOutcomes([], [...real, ...invented], { ...limits, maxEntries: 4 });
    expect(entries.map((entry) => entry.target).sort()).toEqual([
      "etcd-Rejected-4",
      "etcd-Succeeded-0",
      "etcd-Succeeded-1",
      "etcd-Succeeded-2",
    ]);
    expect(evicted.map((entry) => entry.target)).toEqual([
      "etcd-Rejected-0",
      "etcd-Rejected-1",
      "etcd-Rejected-2",
      "etcd-Rejected-3",
    ]);
  });

  it("beyond maxBytes, the oldest entries go", () => {
    const { entries } = mergeOutcomes([], many(50, "Succeeded"), { maxEntries: 1000, maxBytes: 4096 });
    expect(Buffer.byteLength(encodeEntries(entries))).toBeLessThanOrEqual(4096);
    expect(entries.length).toBeGreaterThan(5);
    expect(entries.some((entry) => entry.target === "etcd-Succeeded-49")).toBe(true);
    expect(entries.some((entry) => entry.target === "etcd-Succeeded-0")).toBe(false);
  });

  it("a 10,000-character target is kept as 63 characters", () => {
    const { entries } = mergeOutcomes([], [outcome(1, "Rejected", { target: "e".repeat(10_000) })], limits);
    expect(entries[0]?.target.length).toBe(63);
  });
});

describe("the ConfigMap's encoding", () => {
  it("round-trips entries, times as RFC 3339", () => {
    const { entries } = mergeOutcomes(
      [],
      [
        outcome(1, "Succeeded"),
        outcome(2, "Failed", { type: "onDemandMaintenance", errorCode: "ERR_DEFRAG" }),
      ],
      limits,
    );
    const text = encodeEntries(entries);
    expect(text).toContain('"lastSuccessTime": "2026-11-26T00:01:00.000Z"');
    expect(decodeEntries(text)).toEqual({ entries, problems: [] });
  });

  it("skips what it cannot read and says why, keeping the rest", () => {
    const good: HistoryEntry = applyOutcome(undefined, outcome(1, "Succeeded"));
    const text = JSON.stringify([
      ...JSON.parse(encodeEntries([good])),
      {
        target: "x",
        type: "y",
        lastOutcome: { state: "Exploded", time: "2026-01-01T00:00:00Z", durationSeconds: 1 },
      },
      "nonsense",
    ]);
    const decoded = decodeEntries(text);
    expect(decoded.entries).toEqual([good]);
    expect(decoded.problems).toEqual([
      "entry x/y: lastOutcome.state is not Succeeded, Failed or Rejected",
      "an entry is not an object",
    ]);
    expect(decodeEntries("{").problems[0]).toMatch(/^entries.json is not JSON/);
  });
});

describe("the limits an operator sets are checked", () => {
  it("names the option and what it accepts", () => {
    expect(historyLimitsOf({ maxEntries: 50 })).toEqual({ maxEntries: 50, maxBytes: 128 * 1024 });
    expect(() => historyLimitsOf({ maxEntries: 0 })).toThrow(
      "history.maxEntries must be a whole number ≥ 1 (got 0)",
    );
    expect(() => historyLimitsOf({ maxBytes: 2 * 1024 * 1024 })).toThrow(
      /history.maxBytes must be .* at most 1 MiB/,
    );
  });
});

describe("bounding and encoding, entry by entry, agree with the whole array's", () => {
  const time = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) });
  // Quotes, backslashes, newlines and characters of 2–4 UTF-8 bytes: what changes an entry's bytes.
  const text = fc.string({ unit: fc.constantFrom("a", "b", '"', "\\", "\n", "é", "€", "😀"), maxLength: 20 });
  const entry = fc
    .record({
      target: text,
      type: fc.constantFrom("onDemandSnapshot", "onDemandMaintenance", "invalid"),
      state: fc.constantFrom<TaskOutcome["state"]>("Succeeded", "Failed", "Rejected"),
      at: time,
      durationSeconds: fc.double({ min: 0, max: 1e6, noNaN: true }),
      errorCode: fc.option(text, { nil: undefined }),
      lastSuccessAt: fc.option(time, { nil: undefined }),
      lastFailureAt: fc.option(time, { nil: undefined }),
    })
    .map(
      ({
        target,
        type,
        state,
        at,
        durationSeconds,
        errorCode,
        lastSuccessAt,
        lastFailureAt,
      }): HistoryEntry => ({
        target,
        type,
        last: { state, at, durationSeconds, ...(errorCode === undefined ? {} : { errorCode }) },
        ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
        ...(lastFailureAt === undefined ? {} : { lastFailureAt }),
      }),
    );
  const unique = fc.uniqueArray(entry, {
    selector: (e) => JSON.stringify([e.target, e.type]),
    maxLength: 30,
  });

  it("the encoding is JSON.stringify's with one space of indent and a final newline", () => {
    fc.assert(
      fc.property(unique, (entries) => {
        const encoded = encodeEntries(entries);
        expect(encoded).toBe(`${JSON.stringify(JSON.parse(encoded), null, 1)}\n`);
        expect(decodeEntries(encoded, Date.UTC(2030, 0, 2)).entries).toHaveLength(entries.length);
      }),
    );
  });

  it("evicts as evicting one entry at a time and encoding the rest again would, and hands over that encoding", () => {
    const neverRan = (e: HistoryEntry) =>
      e.lastSuccessAt === undefined && e.lastFailureAt === undefined ? 0 : 1;
    const key = (e: HistoryEntry) => JSON.stringify([e.target, e.type]);
    const reference = (entries: ReadonlyArray<HistoryEntry>, maxEntries: number, maxBytes: number) => {
      const ordered = [...entries].sort(
        (a, b) =>
          neverRan(a) - neverRan(b) ||
          a.last.at - b.last.at ||
          (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0),
      );
      const evicted: HistoryEntry[] = [];
      while (
        ordered.length > 0 &&
        (ordered.length > maxEntries || Buffer.byteLength(encodeEntries(ordered)) > maxBytes)
      )
        evicted.push(ordered.shift() as HistoryEntry);
      return { kept: encodeEntries(ordered), evicted };
    };
    // The byte bound is set at or within 2 bytes of the size some eviction leaves: an error of a
    // separator or a bracket shows there.
    const sizesWhileEvicting = (entries: ReadonlyArray<HistoryEntry>) =>
      reference(entries, Number.MAX_SAFE_INTEGER, 0).evicted.map((_, i, evicted) =>
        Buffer.byteLength(encodeEntries(entries.filter((e) => !evicted.slice(0, i + 1).includes(e)))),
      );
    fc.assert(
      fc.property(
        unique,
        fc.integer({ min: 1, max: 35 }),
        fc.nat(),
        fc.integer({ min: -2, max: 2 }),
        (entries, maxEntries, pick, delta) => {
          const sizes = [Buffer.byteLength(encodeEntries(entries)), ...sizesWhileEvicting(entries)];
          const maxBytes = (sizes[pick % sizes.length] ?? 0) + delta;
          const bounded = withinLimits(entries, { maxEntries, maxBytes });
          const expected = reference(entries, maxEntries, maxBytes);
          expect(bounded.encoded).toBe(expected.kept);
          expect(bounded.encoded).toBe(encodeEntries(bounded.entries));
          expect(bounded.evicted).toEqual(expected.evicted);
        },
      ),
      { numRuns: 300 },
    );
  });
});
