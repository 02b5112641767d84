// The core's due times (src/reconcile/core.ts) against a model: a plain map of key → due time, set
// and cleared by the rules written out below, over arbitrary sequences of watched changes, turns
// (handlers that complete, poll, fail or hang; writes that succeed, fail, find the task gone or
// hang), late answers and clock steps. One due time per key and the last decision wins; a started or
// deleted key has none, and a pass of a task that is gone or released sets none (nor clears one: the
// name may hold a new object); a settled task is due at its TTL; a backoff is jittered by the given
// function and nothing else is; `takeDue` answers each due key once, in time order, and `nextDue` is
// the earliest.
import { fc, test } from "@fast-check/vitest";
import { describe, expect } from "vitest";
import { nextRetryState, noRetry, type RetryState } from "../../src/effects/retry-state.ts";
import { backoffDelayMs } from "../../src/machine/backoff.ts";
import type { TaskObject } from "../../src/reconcile/core.ts";
import { Answer, type PassRequest } from "../../src/reconcile/pass.ts";
import {
  type CallCommand,
  type Command,
  completed,
  config,
  coreHarness,
  epoch,
  poll,
  type Script,
  taskObject,
  transient,
} from "../support/core-harness.ts";

/** Distinguishable from no jitter: a backoff due time is 7 ms later than its delay says. */
const jitter = (delayMs: number) => delayMs + 7;

type Reply = "completed" | "poll" | "transient" | "hang";
type Write = "ok" | "fail" | "gone" | "hang";
type Op =
  | { readonly op: "turn"; readonly key: string; readonly reply: Reply; readonly write: Write }
  | { readonly op: "finish"; readonly key: string; readonly reply: Reply; readonly write: Write }
  | {
      readonly op: "change";
      readonly key: string;
      readonly type: "ADDED" | "MODIFIED" | "DELETED";
      readonly succeeded: boolean;
      readonly deleting: boolean;
      readonly ttlSeconds: number;
    }
  | { readonly op: "tick"; readonly ms: number };

const key = fc.constantFrom("ns/a", "ns/b", "ns/c");
const reply = fc.constantFrom<Reply>("completed", "poll", "transient", "hang");
const write = fc.constantFrom<Write>("ok", "ok", "ok", "fail", "gone", "hang");
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("turn" as const), key, reply, write }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("finish" as const), key, reply, write }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("change" as const),
      key,
      type: fc.constantFrom("ADDED" as const, "MODIFIED" as const, "DELETED" as const),
      succeeded: fc.boolean(),
      deleting: fc.boolean(),
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

const replyOf = (r: Reply) =>
  r === "completed" ? completed : r === "poll" ? poll : r === "transient" ? transient : ("hang" as const);
/** The script of a pass: `write` applies to its first status write that carries a state. */
const scriptOf = (r: Reply, w: Write): Script => {
  let first = true;
  const carriesState = (request: Exclude<PassRequest, { _tag: "RunPhase" }>) =>
    request._tag === "PatchStatus" && request.patch.state !== undefined;
  return {
    reply: () => replyOf(r),
    write: (request) => {
      if (w === "ok" || !first || !carriesState(request)) return undefined;
      first = false;
      return w === "hang"
        ? "hang"
        : w === "gone"
          ? Answer.Gone()
          : Answer.Failed({ cause: "conflict", now: 0 });
    },
  };
};

const metaOf = (object: TaskObject | undefined) => object?.metadata as Record<string, unknown> | undefined;

describe("the core's due times", () => {
  test.prop([fc.array(op, { minLength: 10, maxLength: 150, size: "max" })], { numRuns: 200 })(
    "one per key, the last decision wins; none for a started or deleted key, none set by a pass of a gone or released task; taken once, in time order",
    (ops) => {
      const h = coreHarness({ jitter });
      // The model.
      const due = new Map<string, number>();
      const retry = new Map<string, RetryState>();
      const kept = new Set<string>();
      const released = new Set<string>();
      /** Keys with a pass waiting for a handler call (the call) or a write (true). */
      const open = new Map<string, CallCommand | true>();
      const generations = new Map<string, number>();
      const uidIn = (k: string) => metaOf(h.copy.get(k))?.uid as string | undefined;

      /** Applies what the core reported, in order, to the model (the copy as the driver holds it). */
      const observe = (commands: ReadonlyArray<Command>, present: Map<string, string | undefined>) => {
        for (const command of commands) {
          const now = h.now();
          // The task was deleted during its call: its key is free.
          if (command._tag === "Abort") open.delete(command.key);
          else if (command._tag === "Started") {
            due.delete(command.pass.key);
            kept.delete(command.pass.uid);
          } else if (command._tag === "Store") {
            const meta = metaOf(command.object);
            const k = `ns/${String(meta?.name)}`;
            const finalizers = (meta?.finalizers ?? []) as unknown[];
            const here = present.get(k);
            if (
              here !== undefined &&
              here === meta?.uid &&
              finalizers.length === 0 &&
              meta?.deletionTimestamp !== undefined
            )
              released.add(here);
            if (here === undefined || here === meta?.uid) present.set(k, meta?.uid as string);
          } else if (command._tag === "Ended") {
            const { pass } = command;
            open.delete(pass.key);
            const exists = present.get(pass.key) === pass.uid;
            // A pass of a task that is gone or released decides nothing about the key's due time.
            const decides = exists && !released.has(pass.uid);
            if (command.how === "gone") retry.delete(pass.uid);
            else if (command.how === "ended" && command.end !== undefined) {
              const next = nextRetryState(retry.get(pass.uid) ?? noRetry, command.end, now);
              if (next === noRetry || !exists) retry.delete(pass.uid);
              else retry.set(pass.uid, next);
              const { end } = command;
              if (decides && end._tag === "RequeueAfter")
                due.set(pass.key, now + (end.reason === "backoff" ? jitter(end.delayMs) : end.delayMs));
              else if (decides) due.delete(pass.key);
            } else if (command.how === "aborted") {
              if (!decides) expect(command.retryInMs).toBeUndefined();
              else {
                const retries = retry.get(pass.uid)?.retries ?? 0;
                const backoff = jitter(Math.max(config.minRequeueMs, backoffDelayMs(config, retries)));
                expect(command.retryInMs).toBe(backoff);
                due.set(pass.key, now + backoff);
                retry.set(pass.uid, { retries: retries + 1 });
                if (command.step.pass.unwritten !== undefined) kept.add(pass.uid);
              }
            }
          }
        }
      };
      const settled = (k: string, uid: string, object: TaskObject | undefined) => {
        const status = object?.status as { state?: string; lastTransitionTime?: string } | undefined;
        const spec = object?.spec as { ttlSecondsAfterFinished: number } | undefined;
        const finishedAt =
          status?.lastTransitionTime === undefined ? epoch : Date.parse(status.lastTransitionTime);
        const ttlAt = finishedAt + (spec?.ttlSecondsAfterFinished ?? 0) * 1000;
        const fresh = !retry.has(uid) && !kept.has(uid) && !open.has(k);
        const deleting = metaOf(object)?.deletionTimestamp !== undefined;
        return status?.state === "Succeeded" && !deleting && fresh && ttlAt > h.now() ? ttlAt : undefined;
      };
      const presentNow = () => new Map([...h.copy.keys()].map((k) => [k, uidIn(k)] as const));

      for (const step of ops) {
        if (step.op === "tick") {
          h.tick(step.ms);
          const now = h.now();
          const taken = h.core.takeDue(now);
          const expected = [...due].filter(([, at]) => at <= now);
          expect([...taken].sort()).toEqual(expected.map(([k]) => k).sort());
          const order = taken.map((k) => due.get(k) ?? Number.NaN);
          expect(order).toEqual([...order].sort((x, y) => x - y));
          for (const [k] of expected) due.delete(k);
        } else if (step.op === "change") {
          const object = h.copy.get(step.key);
          const uid = uidIn(step.key);
          // Events the watch can send: ADDED for a new object, DELETED for a stored one, MODIFIED for a
          // stored one we have not released (after our last finalizer's removal comes its deletion).
          if (step.type === "ADDED" && object !== undefined) continue;
          if (step.type === "DELETED" && (object === undefined || uid === undefined)) continue;
          if (step.type === "MODIFIED" && (uid === undefined || released.has(uid))) continue;
          if (step.type === "DELETED" && uid !== undefined) {
            const commands = h.change("DELETED", object ?? {});
            generations.set(step.key, (generations.get(step.key) ?? 0) + 1);
            retry.delete(uid);
            kept.delete(uid);
            released.delete(uid);
            due.delete(step.key);
            observe(commands, presentNow());
          } else {
            const name = step.key.slice(3);
            const version = h.nextVersion();
            const next = taskObject(name, {
              uid: `${name}-${generations.get(step.key) ?? 0}`,
              version,
              group: name,
              ttlSeconds: step.ttlSeconds,
              // A deletion is never taken back.
              deleting: step.deleting || metaOf(object)?.deletionTimestamp !== undefined,
              // Someone else's edit, outside the status: no pass takes its event for an echo.
              labels: { edited: String(version) },
              ...(step.succeeded ? { state: "Succeeded" as const } : { state: "InProgress" as const }),
            });
            const nextUid = String(metaOf(next)?.uid);
            // Someone else's edit ends a poll wait (not an error backoff).
            const before = retry.get(nextUid);
            if (step.type === "MODIFIED" && before?.retries === 0 && before.retryAt !== undefined)
              retry.delete(nextUid);
            const ttlAt = settled(step.key, nextUid, next);
            const present = presentNow();
            present.set(step.key, nextUid);
            const commands = h.change(step.type, next);
            const wakes = commands.some((command) => command._tag === "Wake" && command.key === step.key);
            expect(wakes).toBe(ttlAt === undefined);
            if (ttlAt !== undefined) due.set(step.key, ttlAt);
            observe(commands, present);
          }
        } else if (step.op === "turn") {
          if (open.has(step.key)) continue;
          const object = h.copy.get(step.key);
          const uid = uidIn(step.key);
          if (object === undefined || uid === undefined) continue;
          const ttlAt = settled(step.key, uid, object);
          const commands = h.turn(step.key, scriptOf(step.reply, step.write));
          const started = commands.some((command) => command._tag === "Started");
          if (released.has(uid)) expect(commands).toEqual([]);
          else if (ttlAt !== undefined) {
            // A settled task only gets its TTL due time.
            expect(commands.map((command) => command._tag)).toEqual(["DueChanged"]);
            due.set(step.key, ttlAt);
          } else expect(started).toBe(true);
          observe(commands, presentNow());
          const ended = commands.some((command) => command._tag === "Ended");
          const call = [...commands]
            .reverse()
            .find((command): command is CallCommand => command._tag === "Call");
          if (started && !ended) open.set(step.key, h.waiting(step.key) ? true : (call ?? true));
        } else {
          const waiting = open.get(step.key);
          if (waiting === undefined) continue;
          const script = scriptOf(step.reply, step.write === "hang" ? "ok" : step.write);
          const commands =
            waiting === true
              ? h.answer(
                  step.key,
                  step.write === "fail" ? Answer.Failed({ cause: "conflict", now: 0 }) : undefined,
                  script,
                )
              : h.returns(
                  waiting,
                  step.reply === "hang" ? completed : (replyOf(step.reply) as typeof completed),
                  script,
                );
          open.delete(step.key);
          observe(commands, presentNow());
          const ended = commands.some((command) => command._tag === "Ended");
          const call = [...commands]
            .reverse()
            .find((command): command is CallCommand => command._tag === "Call");
          if (!ended && call !== undefined && commands.at(-1) === call) open.set(step.key, call);
        }
        expect(h.core.dueCount).toBe(due.size);
        expect(h.core.nextDue()).toBe(due.size === 0 ? undefined : Math.min(...due.values()));
      }
    },
  );
});
