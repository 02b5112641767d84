/**
 * Noticing another controller on our tasks (etcd-druid ≥ v0.34 runs its own EtcdOpsTask controller): a
 * field manager other than ours that wrote a task's status or owns our finalizer (druid adds the same
 * finalizer name, so only who added it tells). The controller does not fight over the object; it says
 * so once per task and writer, with a Warning Event, a metric and a log line, naming the other controller
 * when the kind knows it (`OtherController`; for EtcdOpsTask, etcd-druid's and deploy/coexistence/).
 * `inspect` runs on each object as it arrives, before the cache drops `managedFields` (cache-object.ts);
 * findings wait in a small queue until the controller drains them.
 *
 * A field manager's name is the writer's choice (anyone who may patch a task chooses one per request),
 * so what it costs is bounded: at most `maxReportedPerTask` writes are reported per task (Events, log
 * lines, metric increments), the name is shortened in the Event as in the metric label, and the metric
 * keeps a few managers' series and removes them with their tasks (foreign-writer-series.ts).
 */
import * as Effect from "effect/Effect";
import type { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import type { KubeObject } from "../kube/object.ts";
import { boundedLabelValue } from "./metric-series.ts";
import type { ControllerObserver } from "./metrics.ts";

/** What another writer did to a task. */
export type ForeignField = "status" | "finalizer";

export interface ForeignWrite {
  readonly field: ForeignField;
  /** The other field manager (e.g. `etcd-druid`). */
  readonly manager: string;
  readonly task: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion: string;
  };
}

export interface ForeignWriterOptions {
  /** Our own field managers (the one the controller writes as, and its earlier names). */
  readonly ownManagers: ReadonlyArray<string>;
  /** Our finalizer. */
  readonly finalizer: string;
  /** Tasks remembered as reported (oldest forgotten beyond this; a repeat report is harmless). */
  readonly maxRemembered?: number;
  /** Writes reported per task (writer and field pairs); later ones are dropped (default 3). */
  readonly maxReportedPerTask?: number;
}

/** Writes reported per task by default: a status writer and a finalizer's, and one more. */
export const DefaultMaxReportedPerTask = 3;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The foreign writes recorded in an object's managedFields (pure; empty for most objects). */
export const foreignWrites = (
  object: KubeObject,
  options: Pick<ForeignWriterOptions, "ownManagers" | "finalizer">,
): ForeignWrite[] => {
  const entries = object.metadata.managedFields;
  if (!Array.isArray(entries)) return [];
  const { name, namespace, uid, resourceVersion } = object.metadata;
  const task = { name, namespace, uid, resourceVersion };
  const finalizerKey = `v:${JSON.stringify(options.finalizer)}`;
  const found: ForeignWrite[] = [];
  for (const entry of entries) {
    if (!isRecord(entry)) continue;
    const manager = typeof entry.manager === "string" ? entry.manager : "";
    // A writer that sent neither a field manager nor a User-Agent is recorded as "unknown": it cannot
    // be told apart from our own writes made before they carried a field manager, so it is not
    // reported (etcd-druid always names itself: client-go sends its binary's name).
    if (manager === "" || manager === "unknown" || options.ownManagers.includes(manager)) continue;
    if (entry.subresource === "status") {
      found.push({ field: "status", manager, task });
      continue;
    }
    const fields = isRecord(entry.fieldsV1) ? entry.fieldsV1 : undefined;
    const metadata =
      fields !== undefined && isRecord(fields["f:metadata"]) ? fields["f:metadata"] : undefined;
    const finalizers =
      metadata !== undefined && isRecord(metadata["f:finalizers"]) ? metadata["f:finalizers"] : undefined;
    if (finalizers !== undefined && finalizerKey in finalizers)
      found.push({ field: "finalizer", manager, task });
  }
  return found;
};

export interface ForeignWriterWatch {
  /** Looks at an object as it arrives (before the cache drops its managedFields). */
  readonly inspect: (object: KubeObject) => void;
  /** The foreign writes not reported yet (each task, writer and field once, a few per task). */
  readonly drain: () => ForeignWrite[];
  /** A task is gone: it may be reported again if it comes back under the same UID (it cannot). */
  readonly forget: (uid: string) => void;
}

export const makeForeignWriterWatch = (options: ForeignWriterOptions): ForeignWriterWatch => {
  const maxRemembered = options.maxRemembered ?? 10_000;
  const maxPerTask = options.maxReportedPerTask ?? DefaultMaxReportedPerTask;
  /** By task UID (oldest first): the `manager field` pairs reported. Empty unless someone else writes. */
  const reported = new Map<string, Set<string>>();
  const pending: ForeignWrite[] = [];
  return {
    inspect: (object) => {
      for (const write of foreignWrites(object, options)) {
        const pair = `${write.manager} ${write.field}`;
        const seen = reported.get(write.task.uid);
        if (seen?.has(pair) || (seen?.size ?? 0) >= maxPerTask) continue;
        if (seen === undefined) reported.set(write.task.uid, new Set([pair]));
        else seen.add(pair);
        if (reported.size > maxRemembered) reported.delete(reported.keys().next().value ?? "");
        pending.push(write);
      }
    },
    drain: () => pending.splice(0),
    forget: (uid) => {
      reported.delete(uid);
    },
  };
};

/** Another controller known to act on a kind's objects, named when a foreign write is reported. */
export interface OtherController {
  /** Who it is, as in "another controller acts on it (etcd-druid's EtcdOpsTask controller?)". */
  readonly name: string;
  /** Where to read how to keep it off, as in "(see deploy/coexistence)". */
  readonly guide?: string;
}

/** Whom the Event names: the task's kind, this controller, and the other controller when it is known. */
export interface ForeignWriteWording {
  /** The task's kind, e.g. `BackupVerification`. */
  readonly kind: string;
  /** This controller, as its writes name it (its field manager). */
  readonly controller: string;
  readonly other?: OtherController;
}

/** The Event's text for a foreign write. */
export const foreignWriteNote = (write: ForeignWrite, wording: ForeignWriteWording): string => {
  const { kind, controller, other } = wording;
  const suspect = other === undefined ? "" : ` (${other.name}?)`;
  const guide = other?.guide === undefined ? "" : ` (see ${other.guide})`;
  const stance = `${controller} does not fight over it. Keep one controller per ${kind}${guide}.`;
  const manager = JSON.stringify(boundedLabelValue(write.manager));
  return write.field === "status"
    ? `field manager ${manager} wrote this ${kind}'s status: another controller acts on it${suspect}; ${stance}`
    : `field manager ${manager} added the finalizer ${controller} uses: another controller acts on this ${kind}${suspect}; ${stance}`;
};

/**
 * Field managers that count as ours whatever the controller's own: `opstask`, every kind's default
 * in earlier releases, so that a kind moving to its own default is not reported for its old writes.
 */
export const ownFieldManagers: ReadonlyArray<string> = ["opstask"];

/** Says so, for each foreign write: a Warning Event on the task, a metric, a log line. */
export const reportForeignWrites = (
  writes: ReadonlyArray<ForeignWrite>,
  recorder: EventRecorder["Service"],
  observer: ControllerObserver,
  wording: ForeignWriteWording,
): Effect.Effect<void> =>
  writes.length === 0
    ? Effect.void
    : Effect.forEach(
        writes,
        (write) =>
          Effect.gen(function* () {
            observer.foreignWrite?.(write.manager, write.field, write.task.uid);
            yield* Effect.logWarning("another controller writes this task").pipe(
              Effect.annotateLogs({
                kind: wording.kind,
                task: `${write.task.namespace}/${write.task.name}`,
                manager: boundedLabelValue(write.manager),
                field: write.field,
              }),
            );
            yield* recorder.record(write.task, {
              type: "Warning",
              reason: "ForeignWriter",
              note: foreignWriteNote(write, wording),
            });
          }),
        { discard: true },
      );
