/**
 * The schedule controller, kind-neutral and built from the runtime's public pieces (an informer of
 * TaskSchedules, one per target kind filtered by the schedule label, a work queue, the Kubernetes
 * client). A pass decodes a schedule, checks its template with the target kind's decoder, reads its runs,
 * `decide`s (decide.ts), asks the guard when a run is due, and performs: the status first, then the create
 * (AlreadyExists: another decider got there), then the deletions; a failed create writes the previous
 * status back so the time is tried again, after a backoff. Time comes from `now`; the queue's timers run
 * on real time.
 */
import { isDeepStrictEqual } from "node:util";
import * as Cause from "effect/Cause";
import * as Clock from "effect/Clock";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Fiber from "effect/Fiber";
import * as Logger from "effect/Logger";
import * as References from "effect/References";
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import * as Scope from "effect/Scope";
import * as Stream from "effect/Stream";
import { formatDecodeError } from "../api/decode-error.ts";
import { TaskStatusSchema } from "../api/status-schema.ts";
import { makeEventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import { apiPath } from "../kube/api-path.ts";
import { jsonPatch, kubeRequest, type RequestSettings } from "../kube/client.ts";
import type { KubeError } from "../kube/errors.ts";
import { withFieldManager } from "../kube/field-manager.ts";
import type { KubeAccess } from "../kube/kube-client-node.ts";
import { isKubeObject, type KubeObject, objectKey } from "../kube/object.ts";
import { RequestCounter } from "../kube/request-metrics.ts";
import { backoffDelayMs } from "../machine/backoff.ts";
import { druidTiming } from "../reconcile/defaults.ts";
import { DefaultMaxTaskBytes, oversizedOf } from "../reconcile/oversized-task.ts";
import type { TaskKind } from "../reconcile/task-kind.ts";
import { randomJitter } from "../runtime/backoff-jitter.ts";
import { type Informer, makeInformer } from "../runtime/informer.ts";
import { makeWorkQueue } from "../runtime/work-queue.ts";
import { decide, refusedByGuard, type ScheduleDecision } from "./decide.ts";
import type { ScheduleGuard } from "./guard.ts";
import type { ObservedRun } from "./observed-run.ts";
import { notReady } from "./ready-condition.ts";
import { rfc3339, scheduleLabel } from "./run-names.ts";
import { runObject } from "./run-object.ts";
import { runCacheKeep, scheduleBoundOf, scheduleCacheKeep } from "./schedule-cache.ts";
import { scheduleRuns } from "./schedule-runs.ts";
import { scheduleResource, type TaskSchedule, TaskScheduleSchema } from "./schedule-spec.ts";
import type { ScheduleStatus } from "./schedule-status.ts";

/** A task kind schedules may create, with the guards its schedules may name. */
export interface ScheduleTarget {
  readonly kind: Pick<TaskKind<unknown>, "resource" | "decode">;
  readonly guards?: Readonly<Record<string, ScheduleGuard>>;
}

export interface ScheduleControllerOptions {
  readonly kubeConfig: KubeAccess;
  readonly targets: ReadonlyArray<ScheduleTarget>;
  /** Watch one namespace; all when absent. */
  readonly namespace?: string;
  /** The clock schedules are decided by (default `Date.now`). */
  readonly now?: () => number;
  /** Field manager of the schedule controller's writes (default `opstask`). */
  readonly fieldManager?: string;
  readonly counter?: RequestCounter;
  /**
   * The task controller's bound on one task (`--max-task-bytes`, default 64 KiB): a run is cached
   * within it, a schedule within twice it (schedule-cache.ts).
   */
  readonly maxTaskBytes?: number;
  readonly logLevel?: "debug" | "info" | "warn" | "error" | "none";
  /**
   * Told after every pass over a schedule what the cache holds of it then (its status as just written),
   * `undefined` once it is gone: the task board's schedule list.
   */
  readonly observe?: (key: string, schedule: KubeObject | undefined) => void;
}

export interface ScheduleController {
  /** Resolves once the schedule and run caches hold their first LIST. */
  readonly synced: Promise<void>;
  /** Decides every cached schedule again (after an injected clock moved). */
  readonly resync: () => Promise<void>;
  readonly stop: () => Promise<void>;
}

const decodeSchedule = SchemaParser.decodeUnknownResult(TaskScheduleSchema, { errors: "all" });
const decodeRunStatus = SchemaParser.decodeUnknownResult(
  Schema.Struct({ status: Schema.optionalKey(TaskStatusSchema) }),
);
const retryAfterErrorMs = 5_000;
/** A run created but not yet in the cache counts as observed for this long. */
const expectationMs = 120_000;
const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error", none: "None" } as const;

const apiVersionOf = (kind: ScheduleTarget["kind"]) => `${kind.resource.group}/${kind.resource.version}`;

const kib = (bytes: number): string => `${Math.ceil(bytes / 1024).toLocaleString("en-US")} KiB`;

export const runScheduleController = async (
  options: ScheduleControllerOptions,
): Promise<ScheduleController> => {
  const fieldManager = options.fieldManager ?? "opstask";
  const client = withFieldManager(options.kubeConfig, fieldManager);
  const counter = options.counter ?? new RequestCounter();
  const settings: RequestSettings = { counter, timeout: Duration.seconds(30) };
  const now = options.now ?? Date.now;
  const maxTaskBytes = options.maxTaskBytes ?? DefaultMaxTaskBytes;
  const scope = Scope.makeUnsafe();
  /** Due times on Effect's clock, per schedule key. */
  const dueTimes = new Map<string, number>();
  /**
   * Schedules whose last create was refused: how many times in a row, and until when (Effect's clock)
   * no create is tried again. Each refused create writes the status twice, and each write brings the
   * schedule back through the queue: without this, a refusing apiserver sees a create per round trip.
   */
  const refusedCreates = new Map<string, { readonly retries: number; readonly until: number }>();
  /** Runs this controller created that the cache may not show yet, per schedule key. */
  const expected = new Map<string, Map<string, { readonly run: ObservedRun; readonly until: number }>>();
  let enqueueAll: () => Promise<void> = async () => undefined;

  const program = Effect.gen(function* () {
    const jitter = yield* randomJitter;
    const schedules = yield* makeInformer({
      kubeConfig: client,
      resource: scheduleResource,
      counter,
      keep: scheduleCacheKeep(maxTaskBytes),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    });
    const keepRun = runCacheKeep(maxTaskBytes);
    const runInformers = new Map<ScheduleTarget, Informer>();
    for (const target of options.targets)
      runInformers.set(
        target,
        yield* makeInformer({
          kubeConfig: client,
          resource: target.kind.resource,
          counter,
          labelSelector: scheduleLabel,
          keep: keepRun,
          ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
        }),
      );

    // Events on the schedule for what a person asks after: a run created, skipped, replaced.
    const events = makeEventRecorder({
      kubeConfig: client,
      resource: scheduleResource,
      counter,
      reportingController: fieldManager,
    });
    const request = (
      verb: "create" | "patch" | "delete",
      method: "POST" | "PATCH" | "DELETE",
      path: string,
      body?: unknown,
      contentType?: string,
    ) =>
      kubeRequest(settings, verb, client, {
        method,
        path,
        ...(body === undefined ? {} : { body }),
        ...(contentType === undefined ? {} : { contentType }),
      });

    const writeStatus = (object: KubeObject, status: ScheduleStatus): Effect.Effect<void, KubeError> =>
      isDeepStrictEqual(object.status ?? {}, status)
        ? Effect.void
        : request(
            "patch",
            "PATCH",
            apiPath(scheduleResource, object.metadata.namespace, object.metadata.name, "status"),
            [
              { op: "test", path: "/metadata/uid", value: object.metadata.uid },
              { op: "add", path: "/status", value: status },
            ],
            jsonPatch,
          ).pipe(
            Effect.tap((response) =>
              Effect.sync(() => isKubeObject(response.body) && schedules.upsert(response.body)),
            ),
            Effect.asVoid,
          );

    const runsOf = (
      key: string,
      schedule: TaskSchedule,
      informer: Informer,
      clockNow: number,
    ): ObservedRun[] => {
      const seen = scheduleRuns(
        schedule.metadata,
        informer.list(schedule.metadata.namespace),
        (run) => {
          const status = decodeRunStatus(run);
          return Result.isSuccess(status) ? status.success.status : undefined;
        },
        clockNow,
      );
      const pending = expected.get(key);
      if (pending === undefined) return seen;
      for (const [name, entry] of pending)
        if (seen.some((run) => run.name === name) || entry.until < clockNow) pending.delete(name);
      return [...seen, ...[...pending.values()].map((entry) => entry.run)];
    };

    const perform = (
      key: string,
      object: KubeObject,
      schedule: TaskSchedule,
      decision: ScheduleDecision,
      target: ScheduleTarget,
    ) =>
      Effect.gen(function* () {
        yield* writeStatus(object, decision.status);
        const create = decision.create;
        if (create !== undefined) {
          const run = runObject(schedule, create.scheduledTime);
          const created = yield* request(
            "create",
            "POST",
            apiPath(target.kind.resource, run.metadata.namespace),
            run,
          ).pipe(
            Effect.as(true),
            Effect.catchIf(
              (error) => error.reason === "Conflict",
              () => Effect.logInfo("run exists already (another decider created it)").pipe(Effect.as(false)),
            ),
            Effect.tapError(() =>
              // The status said the time was handled; take that back so the time is tried again,
              // after a backoff as the task controller's writes have (base · 2^retries, jittered).
              Effect.gen(function* () {
                const retries = refusedCreates.get(key)?.retries ?? 0;
                const delay = jitter(backoffDelayMs(druidTiming, retries));
                const at = yield* Clock.currentTimeMillis;
                refusedCreates.set(key, { retries: retries + 1, until: at + delay });
              }),
            ),
            Effect.tapError(() =>
              writeStatus(
                { ...object, status: decision.status },
                (object.status ?? {}) as ScheduleStatus,
              ).pipe(Effect.ignore),
            ),
          );
          refusedCreates.delete(key);
          if (created) {
            const pending = expected.get(key) ?? new Map();
            pending.set(create.name, {
              run: {
                name: create.name,
                scheduledTime: create.scheduledTime,
                phase: "Active",
                deleting: false,
              },
              until: now() + expectationMs,
            });
            expected.set(key, pending);
            yield* events.record(object.metadata, {
              type: "Normal",
              reason: "RunCreated",
              note: `created ${create.name} for ${rfc3339(create.scheduledTime)}`,
            });
            yield* Effect.logInfo("created run").pipe(
              Effect.annotateLogs({ run: create.name, scheduledTime: rfc3339(create.scheduledTime) }),
            );
          }
        }
        for (const skip of decision.skipped)
          yield* events.record(object.metadata, {
            type: skip.reason === "Superseded" ? "Normal" : "Warning",
            reason:
              skip.reason === "GuardRefused"
                ? "RunRefusedByGuard"
                : skip.reason === "MissedDeadline"
                  ? "MissedSchedule"
                  : "RunsSuperseded",
            note: `${skip.scheduledTime}: ${skip.message}`,
          });
        for (const removal of decision.delete) {
          yield* request(
            "delete",
            "DELETE",
            apiPath(target.kind.resource, schedule.metadata.namespace, removal.name),
            {
              propagationPolicy: "Background",
            },
          ).pipe(
            Effect.catchIf(
              (error) => error.reason === "NotFound",
              () => Effect.void,
            ),
          );
          yield* Effect.logInfo("deleted run").pipe(
            Effect.annotateLogs({ run: removal.name, reason: removal.reason }),
          );
          if (removal.reason === "Replaced")
            yield* events.record(object.metadata, {
              type: "Normal",
              reason: "RunReplaced",
              note: `deleted ${removal.name}: a newer scheduled time replaces it (concurrencyPolicy Replace)`,
            });
        }
      });

    const requeue = (key: string, clockNow: number, at: number | undefined) =>
      Effect.gen(function* () {
        if (at === undefined) {
          dueTimes.delete(key);
          return;
        }
        const effectNow = yield* Clock.currentTimeMillis;
        dueTimes.set(key, effectNow + Math.max(0, at - clockNow));
        yield* queue.dueChanged;
      });

    const observe = options.observe;
    const reconcile = (key: string): Effect.Effect<void> =>
      observe === undefined
        ? decideOnce(key)
        : decideOnce(key).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                const [namespace = "", name = ""] = key.split("/");
                observe(key, schedules.get(namespace, name));
              }),
            ),
          );
    const decideOnce = (key: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        const [namespace = "", name = ""] = key.split("/");
        const object = schedules.get(namespace, name);
        if (object === undefined) {
          dueTimes.delete(key);
          expected.delete(key);
          refusedCreates.delete(key);
          return;
        }
        const clockNow = now();
        const previous = (object.status ?? {}) as ScheduleStatus;
        const oversized = oversizedOf(object);
        if (oversized !== undefined) {
          const message = `the TaskSchedule holds about ${kib(oversized.bytes)} (spec, status and the metadata the controller reads), over the controller's limit of ${kib(scheduleBoundOf(maxTaskBytes))} (twice --max-task-bytes): make spec.taskTemplate smaller, or raise --max-task-bytes`;
          if (oversized.actionable)
            yield* writeStatus(object, notReady(previous, clockNow, "TooLarge", message));
          else yield* Effect.logWarning("schedule too large to write a status to; left alone");
          return yield* requeue(key, clockNow, undefined);
        }
        const decoded = decodeSchedule(object);
        if (Result.isFailure(decoded)) {
          yield* writeStatus(
            object,
            notReady(previous, clockNow, "InvalidSpec", formatDecodeError(decoded.failure).join("; ")),
          );
          return yield* requeue(key, clockNow, undefined);
        }
        const schedule = decoded.success;
        const ref = schedule.spec.taskKind;
        const target = options.targets.find(
          (candidate) =>
            apiVersionOf(candidate.kind) === ref.apiVersion && candidate.kind.resource.kind === ref.kind,
        );
        const informer = target === undefined ? undefined : runInformers.get(target);
        if (target === undefined || informer === undefined) {
          const known = options.targets.map(
            (candidate) => `${candidate.kind.resource.kind} (${apiVersionOf(candidate.kind)})`,
          );
          yield* writeStatus(
            object,
            notReady(
              previous,
              clockNow,
              "UnknownTaskKind",
              `spec.taskKind: this controller runs ${known.join(", ") || "no task kind"}, not ${ref.kind} (${ref.apiVersion})`,
            ),
          );
          return yield* requeue(key, clockNow, undefined);
        }
        const probe = runObject(schedule, clockNow);
        const check = target.kind.decode({
          ...probe,
          metadata: {
            ...probe.metadata,
            uid: "template",
            resourceVersion: "1",
            generation: 1,
            creationTimestamp: rfc3339(clockNow),
          },
        });
        if (!check.ok) {
          const fields = check.failure.errors.map((error) => `spec.taskTemplate.${error}`).join("; ");
          yield* writeStatus(
            object,
            notReady(
              previous,
              clockNow,
              "InvalidTemplate",
              `the template is not a valid ${ref.kind}: ${fields}`,
            ),
          );
          return yield* requeue(key, clockNow, undefined);
        }
        const runs = runsOf(key, schedule, informer, clockNow);
        let decision = decide(
          {
            name: schedule.metadata.name,
            createdAt: Date.parse(schedule.metadata.creationTimestamp),
            rules: schedule.spec,
            status: schedule.status ?? {},
          },
          clockNow,
          runs,
        );
        const guardSpec = schedule.spec.guard;
        if (decision.create !== undefined && guardSpec !== undefined) {
          const guard = target.guards?.[guardSpec.name];
          const verdict =
            guard === undefined
              ? {
                  allow: false as const,
                  reason: `spec.guard.name: ${ref.kind} has no guard "${guardSpec.name}" (known: ${Object.keys(target.guards ?? {}).join(", ") || "none"})`,
                }
              : yield* Effect.tryPromise({
                  try: (signal) =>
                    guard({
                      schedule,
                      run: runObject(schedule, decision.create?.scheduledTime ?? clockNow),
                      parameters: guardSpec.parameters ?? {},
                      signal,
                    }),
                  catch: (cause) => cause,
                }).pipe(
                  Effect.catch((cause) =>
                    Effect.succeed({
                      allow: false as const,
                      reason: `the guard ${guardSpec.name} failed: ${String(cause)}`,
                    }),
                  ),
                );
          if (!verdict.allow) decision = refusedByGuard(schedule.status ?? {}, decision, verdict.reason);
        }
        const refused = refusedCreates.get(key);
        if (decision.create !== undefined && refused !== undefined) {
          const wait = refused.until - (yield* Clock.currentTimeMillis);
          if (wait > 0) return yield* requeue(key, clockNow, clockNow + wait);
        }
        const performed = yield* Effect.exit(perform(key, object, schedule, decision, target));
        if (Exit.isFailure(performed)) {
          yield* Effect.logWarning("schedule pass failed; trying again").pipe(
            Effect.annotateLogs({ cause: Cause.pretty(performed.cause) }),
          );
          const backoff = refusedCreates.get(key);
          const wait =
            backoff === undefined ? retryAfterErrorMs : backoff.until - (yield* Clock.currentTimeMillis);
          return yield* requeue(key, clockNow, clockNow + Math.max(0, wait));
        }
        yield* requeue(key, clockNow, decision.requeueAt);
      }).pipe(
        Effect.catch((error) =>
          Effect.logWarning("schedule status write failed; trying again").pipe(
            Effect.annotateLogs({ error: error.message }),
            Effect.andThen(requeue(key, now(), now() + retryAfterErrorMs)),
          ),
        ),
        Effect.annotateLogs({ schedule: key }),
      );

    const queue = yield* makeWorkQueue({
      concurrency: 2,
      process: reconcile,
      due: {
        nextDue: () => (dueTimes.size === 0 ? undefined : Math.min(...dueTimes.values())),
        takeDue: (at) => {
          const keys = [...dueTimes].filter(([, due]) => due <= at).map(([key]) => key);
          for (const key of keys) dueTimes.delete(key);
          return keys;
        },
        get dueCount() {
          return dueTimes.size;
        },
      },
    });
    // No decision before every cache holds its first LIST: a schedule decided on a run cache not yet
    // filled sees no run and would create one (its changes, subscribed now, start with every cached
    // object, so none is missed).
    yield* schedules.synced;
    for (const informer of runInformers.values()) yield* informer.synced;
    yield* schedules.changes.pipe(
      Stream.runForEach((change) => queue.add(change.key)),
      Effect.forkScoped,
    );
    for (const informer of runInformers.values())
      yield* informer.changes.pipe(
        Stream.runForEach((change) => {
          const owner = (change.object.metadata.labels as Record<string, string> | undefined)?.[
            scheduleLabel
          ];
          return owner === undefined
            ? Effect.void
            : queue.add(objectKey(change.object.metadata.namespace, owner));
        }),
        Effect.forkScoped,
      );
    const context = yield* Effect.context<never>();
    enqueueAll = () =>
      Effect.runPromiseWith(context)(Effect.forEach(schedules.keys(), queue.add, { discard: true }));
  }).pipe(
    Effect.provideService(References.MinimumLogLevel, logLevels[options.logLevel ?? "info"]),
    Effect.provide(Logger.layer(options.logLevel === "none" ? [] : [Logger.consoleJson])),
    Scope.provide(scope),
  );

  const fiber = Effect.runFork(program);
  const synced = new Promise<void>((resolve, reject) =>
    fiber.addObserver((exit) =>
      Exit.isSuccess(exit)
        ? resolve()
        : reject(new Error(`schedule controller did not start: ${Cause.pretty(exit.cause)}`)),
    ),
  );
  // A stop before the caches filled rejects `synced`; a caller that never awaits it has nothing to hear.
  synced.catch(() => undefined);
  let stopping: Promise<void> | undefined;
  return {
    synced,
    resync: () => enqueueAll(),
    stop: () => {
      stopping ??= (async () => {
        await Effect.runPromise(Fiber.interrupt(fiber));
        await Effect.runPromise(Scope.close(scope, Exit.void));
      })();
      return stopping;
    },
  };
};
