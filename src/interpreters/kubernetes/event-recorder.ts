/**
 * Kubernetes Events (`events.k8s.io/v1`) about a task. Best effort, but not given up at the first
 * throttled (429) or failed (5xx, network) attempt: retried with a short jittered backoff (`retry`,
 * default 3 retries from 200 ms), all of it bounded by the request timeout, so that an Event never fails
 * the pass nor delays it beyond that bound. An Event given up is logged at WARN and counted as dropped
 * (`KubeFaults`), each failed attempt as retried.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import * as Clock from "effect/Clock";
import * as Context from "effect/Context";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Schedule from "effect/Schedule";
import type { EventType } from "../../effects/task-effect.ts";
import { apiPath } from "../../kube/api-path.ts";
import { kubeRequest } from "../../kube/client.ts";
import { isRetryable, KubeError } from "../../kube/errors.ts";
import { type KubeAccess, kubeClientOf } from "../../kube/kube-client-node.ts";
import { microTime } from "../../kube/micro-time.ts";
import type { RequestCounter } from "../../kube/request-metrics.ts";
import type { ResourceRef } from "../../reconcile/task-kind.ts";
import { recordFault } from "./fault-counter.ts";
import { defaultRetryPolicy, type RetryPolicy, retrySchedule } from "./task-writer.ts";

/** The object an event is about (the task as last read). */
export interface EventSubject {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
}

export interface TaskEvent {
  readonly type: EventType;
  /** Machine-readable, CamelCase (≤ 128 characters). */
  readonly reason: string;
  /** Human-readable (truncated to 1 kB, the API's limit). */
  readonly note: string;
  /** What was done or failed (≤ 128 characters); defaults to `reason`. */
  readonly action?: string;
  /** When it happened (ms since the epoch); default: when it is recorded (a queue sends it later). */
  readonly at?: number;
}

export class EventRecorder extends Context.Service<
  EventRecorder,
  { record(subject: EventSubject, event: TaskEvent): Effect.Effect<void> }
>()("opstask/kubernetes/EventRecorder") {}

export interface EventRecorderOptions {
  readonly kubeConfig: KubeAccess;
  readonly resource: ResourceRef;
  readonly counter: RequestCounter;
  /** `reportingController` (default "opstask"). */
  readonly reportingController?: string;
  /** `reportingInstance` (default: the host name, i.e. the pod name in a cluster). */
  readonly reportingInstance?: string;
  /** Bound on all attempts together (default 10 s). */
  readonly requestTimeout?: Duration.Input;
  /** Retries of a retryable failure (default: 3 retries, 200 ms doubling to at most 2 s, jittered). */
  readonly retry?: RetryPolicy;
}

const defaultEventRetry: RetryPolicy = {
  ...defaultRetryPolicy,
  base: "200 millis",
  cap: "2 seconds",
  retries: 3,
};

const maxNoteBytes = 1024;

/** An Event whose budget was spent before its next attempt. */
const outOfBudget = new KubeError({ reason: "Transient", code: 0, message: "timed out (all attempts)" });

/**
 * `<object>.<hex time><hex random>`, like client-go's `<object>.<hex nanoseconds>` (a `generateName` of
 * `<object>.` is refused: it must itself be a valid name), cut to the 253 characters a name may have.
 */
const eventName = (object: string): string => {
  const suffix = `${Date.now().toString(16)}${randomBytes(4).toString("hex")}`;
  return `${object.slice(0, 253 - suffix.length - 1)}.${suffix}`;
};

/** Cuts `text` to at most `bytes` UTF-8 bytes without splitting a character. */
export const truncateUtf8 = (text: string, bytes: number): string => {
  if (Buffer.byteLength(text, "utf8") <= bytes) return text;
  let out = "";
  let size = 0;
  for (const char of text) {
    const next = Buffer.byteLength(char, "utf8");
    if (size + next > bytes - 3) break;
    out += char;
    size += next;
  }
  return `${out}…`;
};

export const makeEventRecorder = (options: EventRecorderOptions): EventRecorder["Service"] => {
  const client = kubeClientOf(options.kubeConfig);
  const events = { group: "events.k8s.io", version: "v1", plural: "events" };
  const budgetMs = Duration.toMillis(
    Duration.fromInputUnsafe(options.requestTimeout ?? Duration.seconds(10)),
  );
  // No retry once the budget is spent (its error is Transient, as a timeout is, for the dropped line).
  const schedule = retrySchedule(options.retry ?? defaultEventRetry).pipe(
    Schedule.while(({ input }) => input !== outOfBudget),
  );
  const reportingController = options.reportingController ?? "opstask";
  const reportingInstance = options.reportingInstance ?? hostname();
  const { group, version, kind } = options.resource;

  return EventRecorder.of({
    record: (subject, event) =>
      Effect.gen(function* () {
        const body = {
          apiVersion: "events.k8s.io/v1",
          kind: "Event",
          metadata: { name: eventName(subject.name), namespace: subject.namespace },
          eventTime: microTime(event.at ?? (yield* Clock.currentTimeMillis)),
          reportingController,
          reportingInstance,
          action: (event.action ?? event.reason).slice(0, 128),
          reason: event.reason.slice(0, 128),
          note: truncateUtf8(event.note, maxNoteBytes),
          type: event.type,
          regarding: {
            apiVersion: `${group}/${version}`,
            kind,
            name: subject.name,
            namespace: subject.namespace,
            uid: subject.uid,
            resourceVersion: subject.resourceVersion,
          },
        };
        // The budget bounds all attempts together: each may take what is left of it. (A deadline
        // rather than Effect.timeoutOrElse around the retries: that forks two fibers and interrupts
        // one for each of the ~2 Events a task has; bench/PROFILE.md, eighth pass.)
        const deadline = (yield* Clock.currentTimeMillis) + budgetMs;
        const attempt = Effect.flatMap(Clock.currentTimeMillis, (now) =>
          now >= deadline
            ? Effect.fail(outOfBudget)
            : kubeRequest({ counter: options.counter, timeout: deadline - now }, "create", client, {
                method: "POST",
                path: apiPath(events, subject.namespace),
                body,
              }),
        );
        return yield* attempt.pipe(
          Effect.tapError((error) =>
            isRetryable(error) && error !== outOfBudget ? recordFault("event", "retried") : Effect.void,
          ),
          Effect.retry(schedule),
          Effect.asVoid,
          Effect.catch((error) =>
            recordFault("event", "dropped").pipe(
              Effect.andThen(
                Effect.logWarning(
                  `event ${event.reason} on ${subject.namespace}/${subject.name} dropped: ${error.code} ${error.reason}: ${error.message}`,
                ),
              ),
            ),
          ),
        );
      }).pipe(Effect.withSpan("EventRecorder.record")),
  });
};
