// The scheduler's due times (src/reconcile/pass-timers.ts, through TaskScheduler) against a model: a
// plain map of key → due time, set and cleared by the rules written out below. Over arbitrary
// sequences of passes (ended, stopped, gone, released), watch events and clock steps: one due time per
// key and the last decision wins; a started or deleted key has none, and a pass of a task that is gone
// or released sets none (nor clears one: the name may hold a new object); a settled task is due at its
// TTL; a backoff is jittered by the given function and nothing else is; `takeDue` answers
// each due key once, in time order, and `nextDue` is the earliest.
import { fc, test } from "@fast-check/vitest";
import { describe, expect } from "vitest";
import type { TaskState } from "../../src/api/status.ts";
import { nextRetryState, noRetry, type RetryState } from "../../src/effects/retry-state.ts";
import type { PassEnd, RequeueReason } from "../../src/effects/task-effect.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { backoffDelayMs } from "../../src/machine/backoff.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { type PassHold, TaskScheduler } from "../../src/reconcile/scheduler.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";

const config = lifecycleConfig(etcdOpsTaskKind);
const created = "2026-11-24T00:00:00Z";
const epoch = Date.parse(created);
/** Distinguishable from no jitter: a backoff due time is 7 ms later than its delay says. */
const jitter = (delayMs: number) => delayMs + 7;

type How = "open" | "call" | "ended" | "stopped" | "gone" | "released";
type Op =
  | { readonly op: "pass"; readonly key: string; readonly how: How; readonly end: PassEnd }
  | {
      readonly op: "change";
      readonly key: string;
      readonly type: "ADDED" | "MODIFIED" | "DELETED";
      readonly state: TaskState;
      readonly own: boolean;
      readonly ttlSeconds: number;
    }
  | { readonly op: "tick"; readonly ms: number };

const key = fc.constantFrom("ns/a", "ns/b", "ns/c");
const reasons: ReadonlyArray<RequeueReason> = ["backoff", "poll", "waiting", "queued", "ttl"];
const end: fc.Arbitrary<PassEnd> = fc.oneof(
  fc.constant<PassEnd>({ _tag: "AwaitChange", reason: "test" }),
  fc
    .record({ reason: fc.constantFrom(...reasons), delayMs: fc.integer({ min: 0, max: 90_000 }) })
    .map((r): PassEnd => ({ _tag: "RequeueAfter", ...r })),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("pass" as const),
      key,
      // A pass left open (before or in its handler call) ends in a later step, with events between.
      how: fc.constantFrom<How>("open", "call", "ended", "ended", "ended", "stopped", "gone", "released"),
      end,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("change" as const),
      key,
      type: fc.constantFrom("ADDED" as const, "MODIFIED" as const, "DELETED" as const),
      state: fc.constantFrom<TaskState>("InProgress", "Succeeded"),
      own: fc.boolean(),
      ttlSeconds: fc.integer({ min: 1, max: 3_600 }),
    }),
  },
  {
    weight: 3,
    // Small steps, and long ones that make several keys due at once.
    arbitrary: fc.record({
      op: fc.constant("tick" as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 150_000 })),
    }),
  },
);

/** What the model knows of one key's object. */
interface Stored {
  readonly generation: number;
  state: TaskState;
  ttlSeconds: number;
  released: boolean;
}

/** A pass left open: before its handler call, or in it (`callId`). */
interface Open {
  readonly hold: PassHold;
  readonly generation: number;
  callId?: number;
}

const uidOf = (key: string, generation: number) => `${key.slice(key.indexOf("/") + 1)}-${generation}`;

const factsOf = (key: string, stored: Stored): TaskFacts => ({
  metadata: {
    name: key.slice(key.indexOf("/") + 1),
    namespace: "ns",
    uid: uidOf(key, stored.generation),
    resourceVersion: "1",
    creationTimestamp: created,
  },
  ttlSeconds: stored.ttlSeconds,
  member: "onDemandSnapshot",
  status: { state: stored.state },
});

describe("the scheduler's due times", () => {
  test.prop([fc.array(op, { minLength: 10, maxLength: 200, size: "max" })], { numRuns: 300 })(
    "one per key, the last decision wins; none for a started or deleted key, none set by a pass of a gone or released task; taken once, in time order",
    (ops) => {
      const scheduler = new TaskScheduler({ config, supported: ["onDemandSnapshot"], jitter });
      // The model.
      const due = new Map<string, number>();
      const objects = new Map<string, Stored>();
      const open = new Map<string, Open>();
      const retry = new Map<string, RetryState>();
      const generations = new Map<string, number>();
      let now = epoch;

      const retryAfterEnd = (uid: string, pass: PassEnd, exists: boolean) => {
        const next = nextRetryState(retry.get(uid) ?? noRetry, pass, now);
        if (next === noRetry || !exists) retry.delete(uid);
        else retry.set(uid, next);
      };

      const finish = (passKey: string, pass: Open, how: How, passEnd: PassEnd) => {
        const { hold } = pass;
        if (pass.callId !== undefined) expect(scheduler.returned(hold, pass.callId).current).toBe(true);
        const stored = objects.get(passKey);
        const exists = stored?.generation === pass.generation;
        // A pass of a task that is gone or released decides nothing about the key's due time.
        const decides = exists && stored?.released === false;
        switch (how) {
          case "open":
          case "call":
          case "ended":
            scheduler.ended(hold, passEnd, now, exists);
            retryAfterEnd(hold.uid, passEnd, exists);
            if (decides && passEnd._tag === "RequeueAfter")
              due.set(
                passKey,
                now + (passEnd.reason === "backoff" ? jitter(passEnd.delayMs) : passEnd.delayMs),
              );
            else if (decides) due.delete(passKey);
            return;
          case "stopped": {
            const previous = retry.get(hold.uid) ?? noRetry;
            const { delayMs } = scheduler.stopped(hold, undefined, exists, now);
            if (!decides) return expect(delayMs).toBeUndefined();
            const backoff = jitter(Math.max(config.minRequeueMs, backoffDelayMs(config, previous.retries)));
            expect(delayMs).toBe(backoff);
            due.set(passKey, now + backoff);
            retry.set(hold.uid, { retries: previous.retries + 1 });
            return;
          }
          case "gone":
            scheduler.gone(hold);
            retry.delete(hold.uid);
            return;
          case "released":
            // Our write removed the task's last finalizer: whatever the pass ends with, it runs no more.
            if (exists && stored !== undefined) {
              scheduler.release(hold.uid);
              stored.released = true;
            }
            scheduler.ended(hold, passEnd, now, exists);
            retryAfterEnd(hold.uid, passEnd, exists);
            return;
        }
      };

      for (const step of ops) {
        if (step.op === "tick") {
          now += step.ms;
          const taken = scheduler.takeDue(now);
          const expected = [...due].filter(([, at]) => at <= now);
          expect(taken.length).toBe(expected.length);
          expect([...taken].sort()).toEqual(expected.map(([k]) => k).sort());
          const order = taken.map((k) => due.get(k) ?? Number.NaN);
          expect(order).toEqual([...order].sort((x, y) => x - y));
          for (const [k] of expected) due.delete(k);
        } else if (step.op === "change") {
          const stored = objects.get(step.key);
          // Events the watch can send: ADDED for a new object, DELETED for a stored one, MODIFIED for a
          // stored one we have not released (after our last finalizer's removal comes its deletion).
          if (step.type === "ADDED" && stored !== undefined) continue;
          if (step.type === "DELETED" && stored === undefined) continue;
          if (step.type === "MODIFIED" && (stored === undefined || stored.released)) continue;
          const current: Stored = stored ?? {
            generation: generations.get(step.key) ?? 0,
            state: step.state,
            ttlSeconds: step.ttlSeconds,
            released: false,
          };
          if (step.type !== "DELETED") {
            current.state = step.state;
            current.ttlSeconds = step.ttlSeconds;
          }
          const facts = factsOf(step.key, current);
          const uid = facts.metadata.uid;
          const own = step.type === "MODIFIED" && step.own;
          const pass = open.get(step.key);
          const answer = scheduler.changed({ type: step.type, facts, own, now });
          if (step.type === "DELETED") {
            // A handler call of the deleted task is orphaned: its pass never ends.
            const orphaned = pass?.callId !== undefined && pass.generation === current.generation;
            expect(answer.orphaned).toBe(orphaned ? pass?.callId : undefined);
            if (orphaned) open.delete(step.key);
            objects.delete(step.key);
            generations.set(step.key, current.generation + 1);
            retry.delete(uid);
            due.delete(step.key);
            continue;
          }
          objects.set(step.key, current);
          // Someone else's edit ends a poll wait (not an error backoff).
          const before = retry.get(uid);
          if (step.type === "MODIFIED" && !own && before?.retries === 0 && before.retryAt !== undefined)
            retry.delete(uid);
          // A settled task (finished, fresh, TTL ahead, not in a handler call) is due at its TTL; any
          // other change wakes it.
          const ttlAt = epoch + current.ttlSeconds * 1000;
          const fresh = retry.get(uid) === undefined;
          const calling = pass?.callId !== undefined;
          if (!own && current.state === "Succeeded" && fresh && !calling && ttlAt > now)
            due.set(step.key, ttlAt);
        } else {
          const pass = open.get(step.key);
          if (pass !== undefined) {
            if (step.how === "open") continue;
            if (step.how === "call") {
              pass.callId ??= scheduler.calling(pass.hold, "execute").callId;
              continue;
            }
            open.delete(step.key);
            finish(step.key, pass, step.how, step.end);
            continue;
          }
          const stored = objects.get(step.key);
          if (stored === undefined) continue;
          const started = scheduler.start(step.key, factsOf(step.key, stored), () => [], now, "run");
          if (stored.released) {
            expect(started).toBeUndefined();
            continue;
          }
          if (started === undefined) throw new Error("a pass of an idle key without a group starts");
          // The pass decides the key's next due time when it ends.
          due.delete(step.key);
          const begun: Open = { hold: started, generation: stored.generation };
          if (step.how === "call") begun.callId = scheduler.calling(started, "execute").callId;
          if (step.how === "open" || step.how === "call") open.set(step.key, begun);
          else finish(step.key, begun, step.how, step.end);
        }
        expect(scheduler.dueCount).toBe(due.size);
        expect(scheduler.nextDue()).toBe(due.size === 0 ? undefined : Math.min(...due.values()));
      }
    },
  );
});
