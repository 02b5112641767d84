/**
 * Drives the per-key core (src/reconcile/core.ts) by hand, one input at a time: watched changes,
 * turns, handler returns, with scripted answers to its requests. Writes are applied to the newest
 * copy of the object the way the API server would (finalizers, status merge, deletion) and bump its
 * resourceVersion.
 */
import type { TaskState } from "../../src/api/status.ts";
import type { EtcdOpsTask } from "../../src/etcd/api/etcdopstask.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import type { Phase, PhaseOutcome } from "../../src/machine/types.ts";
import { type CoreCommand, type Jitter, TaskCore, type TaskObject } from "../../src/reconcile/core.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import type { HandlerReply } from "../../src/reconcile/handler-defect.ts";
import { Answer, type PassRequest } from "../../src/reconcile/pass.ts";

export const config = lifecycleConfig(etcdOpsTaskKind);
export const created = "2026-11-24T00:00:00Z";
export const epoch = Date.parse(created);

export type Command = CoreCommand<EtcdOpsTask>;
export type CallCommand = Extract<Command, { _tag: "Call" }>;
type Write = Exclude<PassRequest, { _tag: "RunPhase" }>;

export interface TaskShape {
  readonly state?: TaskState;
  readonly deleting?: boolean;
  /** The admission group (the etcd); "etcd-a" unless given. */
  readonly group?: string;
  readonly uid?: string;
  readonly version?: number;
  readonly ttlSeconds?: number;
  readonly labels?: Readonly<Record<string, string>>;
}

export const taskObject = (name: string, shape: TaskShape = {}): TaskObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name,
    namespace: "ns",
    uid: shape.uid ?? `uid-${name}`,
    resourceVersion: String(shape.version ?? 1),
    generation: 1,
    creationTimestamp: created,
    finalizers: [config.finalizer],
    ...(shape.labels === undefined ? {} : { labels: shape.labels }),
    ...(shape.deleting === true ? { deletionTimestamp: "2026-11-24T00:00:01Z" } : {}),
  },
  spec: {
    etcdName: shape.group ?? "etcd-a",
    ttlSecondsAfterFinished: shape.ttlSeconds ?? 3600,
    config: { onDemandSnapshot: { type: "full" } },
  },
  ...(shape.state === undefined ? {} : { status: { state: shape.state } }),
});

export const completed: PhaseOutcome = { kind: "completed", description: "done" };
/** Polls again after a minute (no error: no backoff). */
export const poll: PhaseOutcome = { kind: "retry", description: "waiting", afterMs: 60_000 };
/** An error: an exponential backoff. */
export const transient: PhaseOutcome = {
  kind: "retry",
  description: "failed",
  error: { code: "ERR_TEST", message: "failed", cause: "failed" },
};

export interface Script {
  /** A handler's reply; "hang" leaves the call open (answer it with `returns`). Completes by default. */
  readonly reply?: (phase: Phase) => HandlerReply | "hang";
  /** A write's answer ("hang": none yet, `answer` gives it); performed by default. */
  readonly write?: (request: Write) => Answer | "hang" | undefined;
  /** Someone else's label edit comes back merged into each status write's result. */
  readonly foreign?: boolean;
}

const metaOf = (object: TaskObject) => object.metadata as Record<string, unknown>;
const keyOf = (object: TaskObject) => `${metaOf(object).namespace}/${metaOf(object).name}`;

/** The object a successful write of `request` over `object` returns. */
const written = (object: TaskObject, request: Write, version: number, foreign: boolean): TaskObject => {
  const metadata: Record<string, unknown> = { ...metaOf(object), resourceVersion: String(version) };
  const finalizers = (metadata.finalizers ?? []) as string[];
  if (request._tag === "AddFinalizer") metadata.finalizers = [...finalizers, request.finalizer];
  if (request._tag === "RemoveFinalizer")
    metadata.finalizers = finalizers.filter((finalizer) => finalizer !== request.finalizer);
  if (request._tag === "DeleteTask") metadata.deletionTimestamp ??= "2026-11-24T00:00:02Z";
  if (foreign && request._tag === "PatchStatus") metadata.labels = { edited: String(version) };
  if (request._tag !== "PatchStatus") return { ...object, metadata };
  const status = { ...(object.status as Record<string, unknown> | undefined), ...request.patch };
  const kept = Object.fromEntries(Object.entries(status).filter(([, value]) => value !== null));
  return { ...object, metadata, status: kept };
};

export const coreHarness = (options: { readonly jitter?: Jitter } = {}) => {
  const copy = new Map<string, TaskObject>();
  const core = new TaskCore<EtcdOpsTask>({
    kind: etcdOpsTaskKind,
    config,
    supported: ["onDemandSnapshot"],
    read: (key) => copy.get(key),
    runIdOf: (_now, serial) => `r${serial}`,
    ...(options.jitter === undefined ? {} : { jitter: options.jitter }),
  });
  let now = epoch;
  let version = 100;
  /** Writes left unanswered ("hang"), by key. */
  const pending = new Map<string, Extract<Command, { _tag: "Perform" }>>();

  /** What the server applies a write to: its newest object (someone else's change included). */
  const stored = (key: string, object: TaskObject): TaskObject => {
    const held = copy.get(key);
    return held !== undefined && metaOf(held).uid === metaOf(object).uid ? held : object;
  };

  /** Answers a write: `answer`, or the write performed over the pass's object. */
  const answered = (
    command: Extract<Command, { _tag: "Perform" }>,
    answer: Answer | undefined,
    script: Script,
  ) => {
    if (answer !== undefined) return core.step({ _tag: "Answered", pass: command.pass, answer, now });
    // The server holds no object of this UID under the name any more: 404.
    if (
      metaOf(stored(command.pass.key, command.object)).uid !== command.pass.uid ||
      !copy.has(command.pass.key)
    )
      return core.step({ _tag: "Answered", pass: command.pass, answer: Answer.Gone(), now });
    version += 1;
    const { request } = command;
    const result =
      request._tag === "RecordEvent"
        ? {}
        : {
            written: written(
              stored(command.pass.key, command.object),
              request,
              version,
              script.foreign === true,
            ),
          };
    return core.step({ _tag: "Answered", pass: command.pass, answer: Answer.Done({ now }), now, ...result });
  };

  /** Performs the core's commands, feeding the answers back; answers every command seen. */
  const perform = (commands: Command[], script: Script = {}): Command[] => {
    const seen: Command[] = [];
    const queue = [...commands];
    for (let command = queue.shift(); command !== undefined; command = queue.shift()) {
      seen.push(command);
      if (command._tag === "Store") {
        // As the drivers do: a write's result never replaces another object under the name.
        const held = copy.get(keyOf(command.object));
        if (held === undefined || metaOf(held).uid === metaOf(command.object).uid)
          copy.set(keyOf(command.object), command.object);
      } else if (command._tag === "Perform") {
        const answer = script.write?.(command.request);
        if (answer === "hang") pending.set(command.pass.key, command);
        else queue.push(...answered(command, answer, script));
      } else if (command._tag === "Call") {
        const reply = script.reply?.(command.phase) ?? completed;
        if (reply !== "hang")
          queue.push(
            ...core.step({ _tag: "Returned", pass: command.pass, callId: command.callId, reply, now }),
          );
      }
    }
    return seen;
  };

  return {
    core,
    copy,
    now: () => now,
    tick: (ms: number) => {
      now += ms;
    },
    /** A watched change; the copy is updated as an informer's would be. */
    change: (type: "ADDED" | "MODIFIED" | "DELETED", object: TaskObject, script?: Script) => {
      const key = keyOf(object);
      if (type === "DELETED") copy.delete(key);
      else copy.set(key, object);
      return perform(core.step({ _tag: "Changed", type, key, object, now }), script);
    },
    turn: (key: string, script?: Script) => perform(core.step({ _tag: "Turn", key, now }), script),
    /** A hanging call returns `reply`. */
    returns: (call: CallCommand, reply: HandlerReply, script?: Script) =>
      perform(core.step({ _tag: "Returned", pass: call.pass, callId: call.callId, reply, now }), script),
    /** A hanging write of `key` is answered (performed, without `answer`). */
    answer: (key: string, answer?: Answer, script: Script = {}) => {
      const command = pending.get(key);
      if (command === undefined) throw new Error(`no write of ${key} is waiting`);
      pending.delete(key);
      return perform(answered(command, answer, script), script);
    },
    /** Whether a write of `key` waits for its answer. */
    waiting: (key: string) => pending.has(key),
    /** A resourceVersion newer than every one written so far. */
    nextVersion: () => {
      version += 1;
      return version;
    },
    resync: (keys: ReadonlyArray<string>) => perform(core.step({ _tag: "Resync", keys })),
    related: (group: string) => perform(core.step({ _tag: "RelatedChanged", group })),
  };
};

export const woken = (commands: ReadonlyArray<Command>): string[] =>
  commands.flatMap((command) => (command._tag === "Wake" ? [command.key] : []));

export const find = <T extends Command["_tag"]>(
  commands: ReadonlyArray<Command>,
  tag: T,
): Extract<Command, { _tag: T }> | undefined =>
  commands.find((command): command is Extract<Command, { _tag: T }> => command._tag === tag);

export const all = <T extends Command["_tag"]>(
  commands: ReadonlyArray<Command>,
  tag: T,
): Array<Extract<Command, { _tag: T }>> =>
  commands.filter((command): command is Extract<Command, { _tag: T }> => command._tag === tag);

export const hang = (): "hang" => "hang";
