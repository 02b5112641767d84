/**
 * The controller, simulated: the same passes (src/reconcile/pass.ts), the same retry rule and the same
 * effects as the Kubernetes runtime, run against `MemoryApiServer` under a `FakeClock`, one effect at a
 * time. It can crash between any two effects, park a pass on a hanging handler, fail a status write,
 * and it records everything property tests check: handler calls, writes, events and transitions.
 *
 * The runtime rules (one pass per key, serialised admission per group, kept results, retry
 * bookkeeping, cancelling calls of deleted tasks) are the real runtime's own: both keep their memory in
 * `ControllerMemory` (src/reconcile/controller-memory.ts). A crash loses all of it; the restart lists
 * every object, as an informer would.
 */
import { isTerminal } from "../../api/status.ts";
import { isTaskWrite, type PassEnd, type TaskEffect } from "../../effects/task-effect.ts";
import type { LifecycleConfig, Phase, PhaseOutcome } from "../../machine/types.ts";
import { ControllerMemory, type Kept, type PassHold } from "../../reconcile/controller-memory.ts";
import { defectOutcome } from "../../reconcile/handler-defect.ts";
import {
  advance,
  answerDelete,
  deliver,
  nextEffect,
  type Pass,
  passEnd,
  startPass,
  type TransitionRecord,
} from "../../reconcile/pass.ts";
import { readFacts, type TaskFacts, type TaskKind } from "../../reconcile/task-kind.ts";
import type { MemoryApiServer, WatchEvent } from "./api-server.ts";
import type { FakeClock } from "./clock.ts";
import type { JsonObject } from "./merge-patch.ts";
import { performWrite } from "./perform-write.ts";

/** What a scripted handler does when called. */
export type Behaviour =
  | { readonly kind: "return"; readonly outcome: PhaseOutcome }
  | { readonly kind: "hang" }
  | { readonly kind: "throw"; readonly message: string };

export interface HandlerCall {
  readonly id: number;
  readonly uid: string;
  readonly name: string;
  readonly phase: Phase;
  readonly at: number;
  /** Crashes before this call; calls in different epochs are separated by a crash. */
  readonly epoch: number;
  /** Whether our finalizer was on the stored object when the call started. */
  readonly finalizerPresent: boolean;
  outcome?: PhaseOutcome;
  /** The result reached the object (a status write or the finalizer removal after it succeeded). */
  persisted: boolean;
  /** When it did. */
  persistedAt?: number;
  /** The pass that got the result ended normally without writing it. */
  unwritten?: boolean;
  /**
   * The call's result was dropped: cancelled by a deletion, lost in a crash, or superseded (its status
   * write failed, and by the next pass the task had moved on, e.g. a peer now goes first).
   */
  dropped?: "cancelled" | "crash" | "superseded";
  /** How many watch events the server had sent when the call started (orders calls against changes). */
  readonly eventIndex: number;
}

export interface WriteRecord {
  readonly uid: string;
  readonly name: string;
  readonly effect: TaskEffect["_tag"];
  readonly at: number;
}

export interface RecordedEvent {
  readonly uid: string;
  readonly name: string;
  readonly eventType: string;
  readonly reason: string;
  readonly note: string;
  readonly at: number;
}

export interface PassRecord {
  readonly uid: string;
  readonly name: string;
  readonly at: number;
  readonly transitions: ReadonlyArray<TransitionRecord>;
  readonly end?: PassEnd;
  readonly aborted?: string;
  /** The effects of the pass in order (for the no-op property). */
  readonly effects: ReadonlyArray<TaskEffect["_tag"]>;
}

export interface SimulatedControllerOptions<Task> {
  readonly kind: TaskKind<Task>;
  readonly config: LifecycleConfig;
  /** Config members that have a handler. */
  readonly supported: ReadonlyArray<string>;
  readonly server: MemoryApiServer;
  readonly clock: FakeClock;
  readonly behaviour: (task: TaskFacts, phase: Phase) => Behaviour;
}

/** A handler result not yet on its object, with the call that produced it. */
interface KeptCall extends Kept {
  readonly call: HandlerCall | undefined;
}

interface Parked {
  readonly pass: Pass;
  readonly uid: string;
  readonly phase: Phase;
  readonly call: HandlerCall;
  readonly lockedGroup: string | undefined;
  readonly started: number;
  readonly effects: TaskEffect["_tag"][];
}

interface Running extends PassHold {
  readonly name: string;
  readonly started: number;
  readonly effects: TaskEffect["_tag"][];
  /** The last handler call of this pass whose result is not yet on the object. */
  unpersisted?: KeptCall | undefined;
  object: JsonObject;
  lockedGroup: string | undefined;
}

const splitKey = (key: string): [string, string] => {
  const at = key.indexOf("/");
  return [key.slice(0, at), key.slice(at + 1)];
};

export class SimulatedController<Task> {
  readonly calls: HandlerCall[] = [];
  readonly writes: WriteRecord[] = [];
  readonly events: RecordedEvent[] = [];
  readonly passes: PassRecord[] = [];
  epoch = 0;

  readonly #options: SimulatedControllerOptions<Task>;
  readonly #ready: string[] = [];
  readonly #timers = new Map<string, number>();
  #memory: ControllerMemory<KeptCall>;
  /** The resourceVersion each key's last normally ended pass left behind, and when that pass ended. */
  readonly #settled = new Map<string, { readonly resourceVersion: string; readonly at: number }>();
  /** Passes waiting for a hanging handler call. */
  readonly #parked = new Map<string, Parked>();
  #crashCountdown: number | undefined;
  #failNextStatusWrite = false;
  #failNextDelete = false;
  #concurrentEditBeforeNextMetadataWrite = false;
  #runSerial = 0;
  #callSerial = 0;

  constructor(options: SimulatedControllerOptions<Task>) {
    this.#options = options;
    this.#memory = SimulatedController.#freshMemory(options);
    options.server.watch((event) => this.#onWatch(event));
    this.#relist();
  }

  static #freshMemory(
    options: Pick<SimulatedControllerOptions<unknown>, "config" | "supported">,
  ): ControllerMemory<KeptCall> {
    return new ControllerMemory({ config: options.config, supported: options.supported });
  }

  // ---- commands --------------------------------------------------------------------------------

  /** Runs passes until nothing is ready (or `maxPasses` ran); returns how many ran. */
  runUntilIdle(maxPasses = 10_000): number {
    let count = 0;
    while (this.#ready.length > 0 && count < maxPasses) {
      const key = this.#ready.shift();
      if (key === undefined) break;
      this.#runKey(key);
      count += 1;
    }
    return count;
  }

  /** Moves the clock forward by `ms`, firing timers in order and running what they make ready. */
  advanceAndRun(ms: number): void {
    // Work that is ready now runs now, before time moves.
    this.runUntilIdle();
    const target = this.#options.clock.now() + ms;
    for (;;) {
      const due = [...this.#timers.entries()].filter(([, at]) => at <= target).sort((a, b) => a[1] - b[1])[0];
      if (due === undefined) break;
      const [key, at] = due;
      this.#options.clock.set(Math.max(at, this.#options.clock.now()));
      this.#timers.delete(key);
      this.#enqueue(key);
      this.runUntilIdle();
    }
    this.#options.clock.set(target);
    this.runUntilIdle();
  }

  /** The earliest pending timer, if any. */
  nextTimer(): number | undefined {
    const times = [...this.#timers.values()];
    return times.length === 0 ? undefined : Math.min(...times);
  }

  /** Crash after `effects` more effects have been performed (0: before the next one). */
  crashAfter(effects: number): void {
    this.#crashCountdown = effects;
  }

  /** Crash now and restart: all memory is lost; the restart lists every object. */
  crash(): void {
    this.epoch += 1;
    for (const parked of this.#parked.values()) parked.call.dropped = "crash";
    this.#ready.length = 0;
    this.#timers.clear();
    this.#memory = SimulatedController.#freshMemory(this.#options);
    this.#parked.clear();
    this.#settled.clear();
    this.#crashCountdown = undefined;
    this.#relist();
  }

  /** The next DELETE of a task fails (500). */
  failNextDelete(): void {
    this.#failNextDelete = true;
  }

  failNextStatusWrite(): void {
    this.#failNextStatusWrite = true;
  }

  /** Someone else writes the object between our read and our next metadata write (a 409 for us). */
  editConcurrentlyBeforeNextMetadataWrite(): void {
    this.#concurrentEditBeforeNextMetadataWrite = true;
  }

  /** Names of tasks whose handler call is hanging. */
  hanging(): string[] {
    return [...this.#parked.keys()].map((key) => splitKey(key)[1]);
  }

  /** A hanging handler call returns. */
  resolve(namespace: string, name: string, outcome: PhaseOutcome): boolean {
    const key = `${namespace}/${name}`;
    const parked = this.#parked.get(key);
    if (parked === undefined) return false;
    this.#parked.delete(key);
    const current = this.#options.server.get(namespace, name);
    if (!current.ok) {
      parked.call.dropped = "cancelled";
      this.#enqueueAll(this.#memory.gone({ key, uid: parked.uid, lockedGroup: parked.lockedGroup }));
      return true;
    }
    parked.call.outcome = outcome;
    const running: Running = {
      key,
      uid: parked.uid,
      name,
      started: parked.started,
      effects: parked.effects,
      unpersisted: { call: parked.call, known: { phase: parked.phase, outcome } },
      object: current.value,
      lockedGroup: parked.lockedGroup,
    };
    this.#continue(running, deliver(parked.pass, parked.phase, outcome, this.#options.clock.now()));
    this.runUntilIdle();
    return true;
  }

  // ---- the work queue ---------------------------------------------------------------------------

  #relist(): void {
    for (const object of this.#options.server.list()) {
      const meta = (object.metadata ?? {}) as JsonObject;
      this.#enqueue(`${String(meta.namespace)}/${String(meta.name)}`);
    }
  }

  #enqueue(key: string): void {
    if (!this.#ready.includes(key)) this.#ready.push(key);
  }

  #enqueueAll(keys: ReadonlyArray<string>): void {
    for (const key of keys) this.#enqueue(key);
  }

  #onWatch(event: WatchEvent): void {
    const facts = readFacts(this.#options.kind, event.object);
    if (facts === undefined) return;
    const key = `${facts.metadata.namespace}/${facts.metadata.name}`;
    if (event.type === "DELETED") this.#memory.forget(facts.metadata.uid);
    const changedState = this.#memory.peersMustLook(event.type, facts);
    if (event.type === "DELETED" || facts.metadata.deletionTimestamp !== undefined) {
      this.#cancel(key, facts.metadata.uid);
    }
    if (event.type !== "DELETED") this.#enqueue(key);
    // A task that appeared, ended or went away changes what its peers' admission sees.
    if (changedState && facts.group !== undefined) {
      for (const peer of this.#facts()) {
        if (peer.metadata.namespace === facts.metadata.namespace && peer.group === facts.group) {
          this.#enqueue(`${peer.metadata.namespace}/${peer.metadata.name}`);
        }
      }
    }
  }

  /** A deletion cancels a parked Admit or Execute call (the memory decides which). */
  #cancel(key: string, uid: string): void {
    const { cancelled, ready } = this.#memory.cancel(key, uid);
    if (!cancelled) return;
    const parked = this.#parked.get(key);
    if (parked !== undefined) parked.call.dropped = "cancelled";
    this.#parked.delete(key);
    this.#enqueueAll(ready);
  }

  #facts(): TaskFacts[] {
    return this.#options.server.list().flatMap((object) => {
      const facts = readFacts(this.#options.kind, object);
      return facts === undefined ? [] : [facts];
    });
  }

  // ---- one pass ---------------------------------------------------------------------------------

  #runKey(key: string): void {
    const [namespace, name] = splitKey(key);
    const stored = this.#options.server.get(namespace, name);
    if (!stored.ok) return;
    const facts = readFacts(this.#options.kind, stored.value);
    if (facts === undefined) return;
    const now = this.#options.clock.now();
    const started = this.#memory.start(key, facts, () => this.#facts(), now, this.#nextRunId());
    if (started === undefined) return;
    const { uid, kept } = started;
    this.#settled.delete(key);
    const pass = startPass(started.input);
    const replayed = kept !== undefined && pass.snapshot.context.replayed;
    // A kept result the machine set aside (the task moved on) is superseded; one it ignored while
    // calling the same phase again is not, and the no-repeated-calls property will say so.
    const callsAgain = pass.pending.some((e) => e._tag === "RunPhase" && e.phase === kept?.known.phase);
    if (kept?.call !== undefined && !replayed && !callsAgain) kept.call.dropped = "superseded";
    const running: Running = {
      key,
      uid,
      name,
      started: now,
      effects: [],
      object: stored.value,
      ...(kept === undefined || !replayed ? {} : { unpersisted: kept }),
      lockedGroup: started.lockedGroup,
    };
    this.#continue(running, pass);
  }

  #nextRunId(): string {
    this.#runSerial += 1;
    return `run-${this.#runSerial}`;
  }

  /** Whether the task of this pass is still stored (a pass can end after its task is gone). */
  #exists(running: Running): boolean {
    const [namespace, name] = splitKey(running.key);
    const stored = this.#options.server.get(namespace, name);
    return stored.ok && (stored.value.metadata as JsonObject).uid === running.uid;
  }

  /**
   * The effects a pass would start with if it ran again at the instant the last one ended, for every
   * task that is idle and unchanged since: the "no-op reconcile" check (nothing is performed).
   */
  settledPasses(): Array<{ name: string; effects: TaskEffect[] }> {
    const result: Array<{ name: string; effects: TaskEffect[] }> = [];
    for (const [key, { resourceVersion, at }] of this.#settled) {
      if (this.#memory.isBusy(key) || this.#memory.isDeferred(key) || this.#ready.includes(key)) continue;
      const [namespace, name] = splitKey(key);
      const stored = this.#options.server.get(namespace, name);
      if (!stored.ok || (stored.value.metadata as JsonObject).resourceVersion !== resourceVersion) continue;
      const facts = readFacts(this.#options.kind, stored.value);
      if (facts === undefined) continue;
      if (this.#memory.keeps(facts.metadata.uid)) continue;
      let pass = startPass(this.#memory.inputOf(facts, this.#facts(), at, this.#nextRunId()));
      // Follow the pass through effects that need no answer; a RunPhase would be reported as such.
      const effects: TaskEffect[] = [];
      for (let next = nextEffect(pass); next !== undefined; next = nextEffect(pass)) {
        effects.push(next);
        if (next._tag === "RunPhase" || passEnd(pass) !== undefined) break;
        pass = advance(pass);
      }
      result.push({ name, effects });
    }
    return result;
  }

  /** Performs the pass's effects until it ends, parks on a hanging handler, aborts or crashes. */
  #continue(running: Running, start: Pass): void {
    let pass = start;
    const { clock } = this.#options;
    const [namespace, name] = splitKey(running.key);
    for (;;) {
      const end = passEnd(pass);
      if (end !== undefined) {
        this.#finish(running, pass, end);
        return;
      }
      const effect = nextEffect(pass);
      if (effect === undefined) {
        this.#abort(running, pass, "the pass ended without a requeue or await effect");
        return;
      }
      if (this.#crashCountdown !== undefined) {
        if (this.#crashCountdown === 0) {
          this.passes.push({
            uid: running.uid,
            name,
            at: running.started,
            transitions: pass.transitions,
            aborted: "crash",
            effects: running.effects,
          });
          this.crash();
          return;
        }
        this.#crashCountdown -= 1;
      }
      running.effects.push(effect._tag);
      if (effect._tag === "RunPhase") {
        const { lockedGroup, ready } = this.#memory.calling(running, effect.phase);
        running.lockedGroup = lockedGroup;
        this.#enqueueAll(ready);
        const result = this.#call(running, pass, effect.phase);
        if (result === "parked") return;
        pass = deliver(pass, effect.phase, result.outcome, clock.now());
        running.unpersisted = { call: result.call, known: { phase: effect.phase, outcome: result.outcome } };
        continue;
      }
      if (effect._tag === "RecordEvent") {
        this.events.push({
          uid: running.uid,
          name,
          eventType: effect.eventType,
          reason: effect.reason,
          note: effect.note,
          at: clock.now(),
        });
        pass = advance(pass);
        continue;
      }
      const written = this.#write(running, namespace, name, effect);
      if (written === "gone") {
        this.passes.push({
          uid: running.uid,
          name,
          at: running.started,
          transitions: pass.transitions,
          aborted: "gone",
          effects: running.effects,
        });
        this.#enqueueAll(this.#memory.gone(running));
        return;
      }
      if (effect._tag === "DeleteTask") {
        // The machine decides what a failed DELETE means (recorded, retried with backoff).
        pass = answerDelete(pass, written === "ok" ? {} : { failed: written }, clock.now());
        continue;
      }
      if (written !== "ok") {
        // A failed write ends the pass; the result it carried is kept (never re-asked).
        this.#abort(running, pass, written);
        return;
      }
      if (
        running.unpersisted !== undefined &&
        (effect._tag === "PatchStatus" || effect._tag === "RemoveFinalizer")
      ) {
        const call = running.unpersisted.call;
        if (call !== undefined) {
          call.persisted = true;
          call.persistedAt = clock.now();
        }
        running.unpersisted = undefined;
      }
      pass = advance(pass);
    }
  }

  #call(running: Running, pass: Pass, phase: Phase): "parked" | { outcome: PhaseOutcome; call: HandlerCall } {
    const [namespace, name] = splitKey(running.key);
    const decoded = this.#options.kind.decode(running.object);
    const facts = decoded.ok ? this.#options.kind.facts(decoded.task) : undefined;
    const stored = this.#options.server.get(namespace, name);
    const storedFinalizers = stored.ok ? ((stored.value.metadata as JsonObject).finalizers ?? []) : [];
    this.#callSerial += 1;
    const call: HandlerCall = {
      id: this.#callSerial,
      uid: running.uid,
      name,
      phase,
      at: this.#options.clock.now(),
      epoch: this.epoch,
      eventIndex: this.#options.server.events.length,
      finalizerPresent:
        Array.isArray(storedFinalizers) && storedFinalizers.includes(this.#options.config.finalizer),
      persisted: false,
    };
    this.calls.push(call);
    const behaviour: Behaviour =
      facts === undefined
        ? { kind: "throw", message: "undecodable task" }
        : this.#options.behaviour(facts, phase);
    switch (behaviour.kind) {
      case "return":
        call.outcome = behaviour.outcome;
        return { outcome: behaviour.outcome, call };
      case "throw": {
        const outcome = defectOutcome(behaviour.message);
        call.outcome = outcome;
        return { outcome, call };
      }
      case "hang":
        this.#parked.set(running.key, {
          pass,
          uid: running.uid,
          phase,
          call,
          started: running.started,
          effects: running.effects,
          lockedGroup: running.lockedGroup,
        });
        return "parked";
    }
  }

  /** Performs one write; "ok", "gone" (404, or the UID no longer matches), or the reason it failed. */
  #write(running: Running, namespace: string, name: string, effect: TaskEffect): "ok" | "gone" | string {
    const { server, clock } = this.#options;
    if (
      (effect._tag === "AddFinalizer" || effect._tag === "RemoveFinalizer") &&
      this.#concurrentEditBeforeNextMetadataWrite
    ) {
      this.#concurrentEditBeforeNextMetadataWrite = false;
      server.patch(namespace, name, { metadata: { labels: { "edited-by": `someone-${clock.now()}` } } });
    }
    if (effect._tag === "DeleteTask" && this.#failNextDelete) {
      this.#failNextDelete = false;
      return "the server is currently unable to handle the request (delete etcdopstasks)";
    }
    if (effect._tag === "PatchStatus" && this.#failNextStatusWrite) {
      this.#failNextStatusWrite = false;
      return "status write failed: 500 Internal Server Error";
    }
    const result = performWrite(server, running.object, effect);
    if (result.kind !== "ok") return result.kind === "gone" ? "gone" : result.reason;
    if (result.object !== undefined) running.object = result.object;
    if (isTaskWrite(effect))
      this.writes.push({ uid: running.uid, name, effect: effect._tag, at: clock.now() });
    return "ok";
  }

  #finish(running: Running, pass: Pass, end: PassEnd): void {
    const { clock } = this.#options;
    const [, name] = splitKey(running.key);
    running.effects.push(end._tag);
    const call = running.unpersisted?.call;
    if (call !== undefined) call.unwritten = true;
    this.passes.push({
      uid: running.uid,
      name,
      at: running.started,
      transitions: pass.transitions,
      end,
      effects: running.effects,
    });
    const resourceVersion = (running.object.metadata as JsonObject).resourceVersion;
    if (typeof resourceVersion === "string")
      this.#settled.set(running.key, { resourceVersion, at: clock.now() });
    const ready = this.#memory.ended(running, end, clock.now(), this.#exists(running));
    if (end._tag === "RequeueAfter") this.#timers.set(running.key, clock.now() + end.delayMs);
    else this.#timers.delete(running.key);
    this.#enqueueAll(ready);
  }

  #abort(running: Running, pass: Pass, reason: string): void {
    const { clock } = this.#options;
    const [, name] = splitKey(running.key);
    this.passes.push({
      uid: running.uid,
      name,
      at: running.started,
      transitions: pass.transitions,
      aborted: reason,
      effects: running.effects,
    });
    // An aborted pass backs off like any error; the next pass starts from the stored object.
    const { delayMs, ready } = this.#memory.aborted(running, running.unpersisted, this.#exists(running));
    this.#timers.set(running.key, clock.now() + delayMs);
    this.#enqueueAll(ready);
  }

  /** The current state of every stored task, for checks. */
  terminalOrGone(namespace: string, name: string): boolean {
    const stored = this.#options.server.get(namespace, name);
    if (!stored.ok) return true;
    const facts = readFacts(this.#options.kind, stored.value);
    return facts !== undefined && isTerminal(facts.status.state);
  }
}
