/**
 * The lifecycle invariants, each a named function that throws (with the evidence) when the world
 * breaks it. They read only what an outside observer could: the watch history of the API server, the
 * handler calls, and what the controller would do next.
 */
import { isTerminal, type LastError, type TaskState, type TaskStatus } from "../../src/api/status.ts";
import { isTaskWrite } from "../../src/effects/task-effect.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import { maxLastErrors } from "../../src/machine/status-edits.ts";
import { fromWireTime, toWireTime } from "../../src/machine/time.ts";
import { finalizersOf, foreignFinalizer, metadataOf, type World } from "./world.ts";

const deadlineCode = "ERR_DEADLINE_EXCEEDED";

const fail = (property: string, detail: string): never => {
  throw new Error(`property "${property}" violated: ${detail}`);
};

const statusOf = (object: JsonObject): TaskStatus => (object.status ?? {}) as TaskStatus;
const specOf = (object: JsonObject): JsonObject => (object.spec ?? {}) as JsonObject;

const allowedMoves: Record<string, ReadonlyArray<TaskState>> = {
  none: ["Pending", "InProgress", "Rejected"],
  Pending: ["InProgress", "Rejected"],
  InProgress: ["Succeeded", "Failed"],
  Succeeded: [],
  Failed: [],
  Rejected: [],
};

interface Seen {
  readonly name: string;
  readonly createdAt: number;
  readonly group: string | undefined;
  status: TaskStatus;
  deleting: boolean;
  /**
   * Deleting, and our finalizer is gone: the controller let the task go. Only a foreign finalizer keeps
   * it visible, with the last status we wrote (InProgress, if it was deleted mid-call) frozen on it.
   */
  released: boolean;
  /** Index of its ADDED event in the watch history. */
  readonly addedAt: number;
  /** When the task became terminal, and its TTL. */
  terminalAt?: number;
  ttlSeconds: number;
  deletionRequestedAt?: number;
  gone: boolean;
}

/** Replays the watch history once, checking the per-event properties as it goes. */
export class HistoryChecker {
  readonly #seen = new Map<string, Seen>();
  /** Every status each task had, with when: to check what a write contained. */
  readonly #statuses = new Map<string, Array<{ readonly at: number; readonly status: TaskStatus }>>();
  #index = 0;

  readonly world: World;

  constructor(world: World) {
    this.world = world;
  }

  check(): void {
    const events = this.world.server.events;
    for (; this.#index < events.length; this.#index += 1) {
      const event = events[this.#index];
      if (event === undefined) continue;
      const meta = metadataOf(event.object);
      const uid = String(meta.uid);
      const status = statusOf(event.object);
      const previous = this.#seen.get(uid);
      const spec = specOf(event.object);
      const seen: Seen = previous ?? {
        name: String(meta.name),
        createdAt: fromWireTime(String(meta.creationTimestamp)) ?? 0,
        group: typeof spec.etcdName === "string" ? spec.etcdName : undefined,
        addedAt: this.#index,
        status: {},
        deleting: false,
        released: false,
        ttlSeconds: Number(spec.ttlSecondsAfterFinished ?? 3600),
        gone: false,
      };
      const at = event.at;
      this.#statesMoveForward(seen, status);
      this.#statusFieldsBehave(seen, status);
      if (status.state === "InProgress" && seen.status.state !== "InProgress")
        this.#admissionOrder(uid, seen, this.#index);
      if (isTerminal(status.state) && !isTerminal(seen.status.state)) seen.terminalAt = at;
      if (meta.deletionTimestamp !== undefined && !seen.deleting) {
        seen.deleting = true;
        seen.deletionRequestedAt = at;
      }
      seen.released = seen.deleting && !finalizersOf(event.object).includes(this.world.config.finalizer);
      if (event.type === "DELETED") {
        seen.gone = true;
        seen.deletionRequestedAt ??= at;
      }
      seen.status = status;
      this.#seen.set(uid, seen);
      const history = this.#statuses.get(uid) ?? [];
      history.push({ at, status });
      this.#statuses.set(uid, history);
    }
  }

  /** (a) states move only Pending→InProgress→Succeeded|Failed and Pending→Rejected; terminal states absorb. */
  #statesMoveForward(seen: Seen, status: TaskStatus): void {
    const from = seen.status.state ?? "none";
    const to = status.state;
    if (to === seen.status.state) return;
    if (to === undefined) fail("states move forward", `${seen.name}: state ${from} was removed`);
    else if (!allowedMoves[from]?.includes(to)) fail("states move forward", `${seen.name}: ${from} → ${to}`);
  }

  /** (f) lastErrors ≤ 10 with the newest kept; startedAt set once; lastTransitionTime changes only with state. */
  #statusFieldsBehave(seen: Seen, status: TaskStatus): void {
    const before = seen.status;
    const errors = status.lastErrors ?? [];
    if (errors.length > maxLastErrors) fail("lastErrors bounded", `${seen.name}: ${errors.length} entries`);
    if (!keepsNewest(before.lastErrors ?? [], errors)) {
      fail(
        "lastErrors bounded",
        `${seen.name}: ${JSON.stringify(before.lastErrors)} → ${JSON.stringify(errors)}`,
      );
    }
    if (before.startedAt !== undefined && status.startedAt !== before.startedAt) {
      fail("startedAt set once", `${seen.name}: ${before.startedAt} → ${String(status.startedAt)}`);
    }
    if (status.state === before.state && status.lastTransitionTime !== before.lastTransitionTime) {
      fail(
        "lastTransitionTime changes only with state",
        `${seen.name}: ${String(before.lastTransitionTime)} → ${String(status.lastTransitionTime)} in ${String(status.state)}`,
      );
    }
    if (status.state !== before.state && status.lastTransitionTime === undefined) {
      fail(
        "lastTransitionTime changes only with state",
        `${seen.name}: entered ${String(status.state)} without a transition time`,
      );
    }
  }

  /**
   * (e) a task becomes InProgress only when no other task of its group runs, and no older one was
   * waiting when its admission began (a task created during a long Admit call is judged after it).
   * A task the controller let go of (deleted, our finalizer removed) blocks nothing by its frozen
   * status: whether its call still runs is what `checkOneCallPerGroup` judges.
   */
  #admissionOrder(uid: string, task: Seen, index: number): void {
    if (task.group === undefined) return;
    const admits = this.world.controller.calls.filter((call) => call.uid === uid && call.phase === "admit");
    const admissionBegan = admits.at(-1)?.eventIndex ?? index;
    for (const [otherUid, other] of this.#seen) {
      if (otherUid === uid || other.gone || other.released || other.group !== task.group) continue;
      if (other.addedAt >= admissionBegan && other.status.state !== "InProgress") continue;
      if (other.status.state === "InProgress") {
        fail("admission order", `${task.name} started while ${other.name} of ${task.group} was InProgress`);
      }
      const older =
        other.createdAt < task.createdAt || (other.createdAt === task.createdAt && other.name < task.name);
      const blocks =
        !isTerminal(other.status.state) && (!other.deleting || other.status.state === "InProgress");
      if (older && blocks) {
        fail(
          "admission order",
          `${task.name} started before the older ${other.name} (${String(other.status.state ?? "new")}) of ${task.group}`,
        );
      }
    }
  }

  /** (f) the error of every persisted handler result is the newest entry of lastErrors when written. */
  checkErrorsRecorded(): void {
    for (const call of this.world.controller.calls) {
      const outcome = call.outcome;
      const error =
        outcome?.kind === "failed" ? outcome.error : outcome?.kind === "retry" ? outcome.error : undefined;
      if (error === undefined || call.phase === "cleanup") continue;
      if (
        call.unwritten === true &&
        !this.#alreadyFullOf(call.uid, error.code, toWireTime(call.at), call.at)
      ) {
        fail("lastErrors bounded", `${call.name}: ${error.code} of ${call.phase} was never written`);
      }
      if (call.persistedAt === undefined) continue;
      const written = (this.#statuses.get(call.uid) ?? []).filter((entry) => entry.at === call.persistedAt);
      const observedAt = toWireTime(call.persistedAt);
      const recorded = written.some(({ status }) => {
        // A retry answered past the phase's deadline is followed, in the same write, by the deadline's error.
        const errors = status.lastErrors ?? [];
        const last = errors.at(-1)?.code === deadlineCode ? errors.at(-2) : errors.at(-1);
        return last?.code === error.code && last.observedAt === observedAt;
      });
      if (!recorded)
        fail(
          "lastErrors bounded",
          `${call.name}: ${error.code} of ${call.phase} at ${observedAt} is not the newest error written`,
        );
    }
  }

  /**
   * Ten identical entries (same code, same second) already fill lastErrors: one more changes nothing
   * an observer can see, so it need not be written.
   */
  #alreadyFullOf(uid: string, code: string, observedAt: string, at: number): boolean {
    const written = (this.#statuses.get(uid) ?? []).filter((entry) => entry.at <= at);
    const errors = written.at(-1)?.status.lastErrors ?? [];
    return (
      errors.length === maxLastErrors && errors.every((e) => e.code === code && e.observedAt === observedAt)
    );
  }

  /** (d) every terminal task is deleted (DELETE issued) within its TTL plus `slackMs`. */
  checkTtl(slackMs: number): void {
    const now = this.world.clock.now();
    for (const seen of this.#seen.values()) {
      if (seen.terminalAt === undefined) continue;
      const due = seen.terminalAt + seen.ttlSeconds * 1000 + slackMs;
      const requested = seen.deletionRequestedAt;
      if (requested !== undefined ? requested > due : now > due) {
        fail(
          "deleted after TTL",
          `${seen.name}: terminal at ${seen.terminalAt}, TTL ${seen.ttlSeconds}s, deletion ${requested ?? "never"} (now ${now})`,
        );
      }
    }
  }
}

/** `after` is `before` with zero or more entries appended, cut to the newest `maxLastErrors`. */
const keepsNewest = (before: ReadonlyArray<LastError>, after: ReadonlyArray<LastError>): boolean => {
  const key = (e: LastError) => JSON.stringify([e.code, e.description, e.observedAt]);
  const b = before.map(key);
  const a = after.map(key);
  for (let added = 0; added <= a.length; added += 1) {
    const expected = [...b, ...a.slice(a.length - added)].slice(-maxLastErrors);
    if (expected.length === a.length && expected.every((k, i) => k === a[i])) return true;
  }
  return false;
};

/** (b) no handler phase runs before the finalizer is persisted. */
export const checkFinalizerFirst = (world: World): void => {
  for (const call of world.controller.calls) {
    if (!call.finalizerPresent)
      fail("finalizer before handlers", `${call.name}: ${call.phase} called without our finalizer`);
  }
};

/**
 * (c) a handler result that was persisted is never asked for again; a completed or failed call is
 * repeated only when the controller crashed before its result was persisted (at-least-once).
 */
export const checkNoRepeatedCalls = (world: World): void => {
  const calls = world.controller.calls;
  calls.forEach((call, index) => {
    const final = call.outcome !== undefined && call.outcome.kind !== "retry";
    if (!final || call.dropped !== undefined) return;
    const again = calls
      .slice(index + 1)
      .find((later) => later.uid === call.uid && later.phase === call.phase);
    if (again === undefined) return;
    if (call.persisted)
      fail(
        "no repeated handler calls",
        `${call.name}: ${call.phase} result persisted at ${call.at}, called again at ${again.at}`,
      );
    if (again.epoch === call.epoch) {
      fail(
        "no repeated handler calls",
        `${call.name}: ${call.phase} called again at ${again.at} without a crash (first at ${call.at})`,
      );
    }
  });
};

/** (g) reconciling an unchanged object at the same instant performs nothing. */
export const checkSettledPassesAreNoOps = (world: World): void => {
  for (const { name, effects } of world.controller.settledPasses()) {
    const acting = effects.filter((e) => isTaskWrite(e) || e._tag === "RunPhase" || e._tag === "RecordEvent");
    if (acting.length > 0)
      fail("no-op reconcile", `${name}: a repeated pass would do ${acting.map((e) => e._tag).join(", ")}`);
  }
};

/** (d) after draining, no object holds our finalizer, and the user's foreign finalizers are untouched. */
export const checkReleased = (world: World): void => {
  for (const object of world.server.list()) {
    const meta = metadataOf(object);
    const finalizers = finalizersOf(object);
    if (finalizers.includes(world.config.finalizer)) {
      fail(
        "finalizer released",
        `${String(meta.name)} still holds ${world.config.finalizer} (status ${JSON.stringify(object.status)})`,
      );
    }
    const expectForeign = world.foreign.has(String(meta.name));
    if (expectForeign !== finalizers.includes(foreignFinalizer)) {
      fail(
        "foreign finalizers untouched",
        `${String(meta.name)}: expected foreign finalizer ${expectForeign}, found ${JSON.stringify(finalizers)}`,
      );
    }
    if (!expectForeign)
      fail("finalizer released", `${String(meta.name)} survived the drain without a foreign finalizer`);
  }
};

/**
 * (i) One piece of work per admission group at a time: no Admit or Execute call starts while another
 * task's Admit or Execute call of the same group is still running, even when that task was deleted
 * meanwhile (issue 16, finding 12: its call runs on, and holds the group, until it has ended).
 */
export const checkOneCallPerGroup = (world: World): void => {
  const work = world.controller.calls.filter((call) => call.group !== undefined && call.phase !== "cleanup");
  work.forEach((call, index) => {
    for (const later of work.slice(index + 1)) {
      if (later.group !== call.group || later.uid === call.uid || later.epoch !== call.epoch) continue;
      const running = call.endedAfterCalls === undefined || later.id <= call.endedAfterCalls;
      if (running)
        fail(
          "one call per group at a time",
          `${later.name}: ${later.phase} started at ${later.at} while ${call.name}'s ${call.phase} (from ${call.at}${call.dropped === undefined ? "" : `, ${call.dropped}`}) still ran`,
        );
    }
  });
};

/**
 * (j) A final handler result (completed or failed) is never lost: it reaches the object, unless its
 * task was deleted while the call ran, a crash cut it, or the task had moved on (superseded).
 */
export const checkResultsKept = (world: World): void => {
  for (const call of world.controller.calls) {
    const final = call.outcome !== undefined && call.outcome.kind !== "retry";
    if (final && call.dropped === undefined && !call.persisted)
      fail(
        "results kept",
        `${call.name}: ${call.phase} returned ${call.outcome?.kind} at ${call.endedAt}, never written`,
      );
  }
};

// ---- work saved: the core's rules that spare a pass or a decode ---------------------------------

const versionNumber = (version: string | undefined): number => Number(version ?? Number.NaN);

/**
 * (k) The watch event of our own write starts no pass: a pass woken by nothing but changes of its
 * object never starts over the version its task's previous pass left, when every change in between
 * (since that pass's start) was our own write. (Not after a DELETE: its answer may carry someone
 * else's change unseen, so the pass after it looks again.)
 */
export const checkEchoesSkipped = (world: World): void => {
  const { passes, writes } = world.controller;
  const own = new Set(writes.map((write) => write.resourceVersion));
  const events = world.server.events;
  passes.forEach((pass, index) => {
    if (!pass.onlyChanged) return;
    const previous = passes.slice(0, index).findLast((earlier) => earlier.uid === pass.uid);
    if (previous?.left !== pass.version || previous.effects.includes("DeleteTask")) return;
    const from = versionNumber(previous.version);
    const to = versionNumber(previous.left);
    const between = events.filter((event) => {
      const meta = metadataOf(event.object);
      const version = versionNumber(String(meta.resourceVersion));
      return meta.uid === pass.uid && version > from && version <= to;
    });
    if (between.every((event) => own.has(String(metadataOf(event.object).resourceVersion))))
      fail(
        "own write echoes run no pass",
        `${pass.name}: a pass (${pass.trigger}) started at ${pass.at} over version ${pass.version}, which its previous pass had written`,
      );
  });
};

/** (l) A task whose last finalizer our write removed (the object is gone) gets no pass after it. */
export const checkReleasedTasksLeftAlone = (world: World): void => {
  const { passes, writes } = world.controller;
  for (const write of writes) {
    if (write.effect !== "RemoveFinalizer") continue;
    const removed = world.server.events.findIndex(
      (event) =>
        event.type === "DELETED" &&
        String(metadataOf(event.object).resourceVersion) === write.resourceVersion,
    );
    if (removed < 0) continue;
    const later = passes.find((pass) => pass.uid === write.uid && pass.eventIndex > removed);
    if (later !== undefined)
      fail(
        "released tasks left alone",
        `${write.name}: a pass (${later.trigger}) started at ${later.at} after our write removed its last finalizer`,
      );
  }
};

/** Whether a stored task only waits for its TTL at `now`: finished, not deleting, TTL ahead. */
const settledAt = (object: JsonObject, now: number): boolean => {
  const status = statusOf(object);
  if (!isTerminal(status.state) || metadataOf(object).deletionTimestamp !== undefined) return false;
  const since = fromWireTime(String(status.lastTransitionTime)) ?? 0;
  return since + Number(specOf(object).ttlSecondsAfterFinished ?? 3600) * 1000 > now;
};

/**
 * (m) A finished task found at a restart waits for its TTL undecoded: neither the listing nor a turn
 * of its own decodes it before the TTL runs out (unless a resync looked at every task meanwhile).
 * Checked for the controller's current life.
 */
export const checkSettledTasksUndecoded = (world: World): void => {
  const { controller, server } = world;
  if (controller.epoch === 0 || world.resynced.has(controller.epoch)) return;
  const objects = new Map(
    server.events.map((event) => [String(metadataOf(event.object).resourceVersion), event.object]),
  );
  for (const decode of controller.decodes) {
    if (decode.epoch !== controller.epoch || !decode.own) continue;
    if (versionNumber(decode.version) > controller.listedVersion) continue;
    const object = objects.get(decode.version);
    if (object === undefined || !settledAt(object, decode.at)) continue;
    fail(
      "settled tasks wait undecoded",
      `${String(metadataOf(object).name)}: version ${decode.version} decoded by a ${decode.input} at ${decode.at}, before its TTL`,
    );
  }
};

/**
 * (n) A change's decode is the one the pass it wakes uses: a pass woken by a change decodes its
 * object's version at most once in all (this life), counting the decode of the change.
 */
export const checkDecodesReused = (world: World): void => {
  const { passes, decodes } = world.controller;
  for (const pass of passes) {
    if (pass.trigger !== "object added" && pass.trigger !== "object changed") continue;
    const since = passes
      .filter((other) => other.uid === pass.uid && other.decodeIndex < pass.decodeIndex)
      .reduce((latest, other) => Math.max(latest, other.decodeIndex), 0);
    const decoded = decodes
      .slice(since, pass.decodeIndex)
      .filter(
        (decode) =>
          decode.uid === pass.uid &&
          decode.version === pass.version &&
          decode.epoch === pass.epoch &&
          decode.own,
      );
    if (decoded.length > 1)
      fail(
        "a change's decode is reused",
        `${pass.name}: version ${pass.version} decoded ${decoded.length} times (${decoded.map((d) => d.input).join(", ")}) for a pass (${pass.trigger}) at ${pass.at}`,
      );
  }
};

/** The properties of the work the core's rules save. */
export const checkWorkSaved = (world: World): void => {
  checkEchoesSkipped(world);
  checkReleasedTasksLeftAlone(world);
  checkSettledTasksUndecoded(world);
  checkDecodesReused(world);
};
