/**
 * Leader election over a `coordination.k8s.io/v1` Lease, following client-go's `leaderelection`
 * protocol (docs/design-notes.md §9): acquire by a resourceVersion-guarded write every jittered
 * retryPeriod, renew every retryPeriod, and complete `lost` (for good: the process should exit) when no
 * renewal succeeded within renewDeadline or someone else holds the Lease. A leader whose scope closes
 * releases the Lease. Expiry is judged from when we first saw a record, never from another machine's
 * clock. Writes are JSON merge patches carrying `metadata.resourceVersion`, counted as verb "patch".
 */
import * as Clock from "effect/Clock";
import * as Data from "effect/Data";
import * as Deferred from "effect/Deferred";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Predicate from "effect/Predicate";
import * as Random from "effect/Random";
import type * as Scope from "effect/Scope";
import { apiPath } from "../kube/api-path.ts";
import { kubeRequest, mergePatch, type RequestSettings } from "../kube/client.ts";
import type { KubeError } from "../kube/errors.ts";
import { type KubeAccess, kubeClientOf } from "../kube/kube-client-node.ts";
import { microTime } from "../kube/micro-time.ts";
import { RequestCounter } from "../kube/request-metrics.ts";

export interface LeaderElectionOptions {
  readonly kubeConfig: KubeAccess;
  /** Namespace and name of the Lease. */
  readonly namespace: string;
  readonly name: string;
  /** Unique per candidate (e.g. pod name + random suffix): two processes with one identity both lead. */
  readonly identity: string;
  /** How long others wait for a renewal before taking over (default 15 s; written in whole seconds, rounded up). */
  readonly leaseDuration?: Duration.Input;
  /** A leader that has not renewed for this long gives up (default 10 s; must be < leaseDuration). */
  readonly renewDeadline?: Duration.Input;
  /** Between tries to acquire and between renewals (default 2 s; 1.2 × it must be < renewDeadline). */
  readonly retryPeriod?: Duration.Input;
  /** Release the Lease when the scope closes while leading (default true). */
  readonly releaseOnCancel?: boolean;
  /** Count Lease requests here (default: a counter of its own). */
  readonly counter?: RequestCounter;
  /** Test hook: consulted before every request; the KubeConfig to send it with (an unreachable one, say). */
  readonly kubeConfigHook?: () => KubeAccess;
}

export interface LeaderElectionStatus {
  /** Same as `isLeader()`. */
  readonly leader: boolean;
  /** The holder of the Lease as last read or written by us (absent: none, or not read yet). */
  readonly holder?: string;
  /** `leaseTransitions` of the Lease as last read or written by us. */
  readonly transitions: number;
}

export interface LeaderElection {
  /** True from acquisition until leadership is lost or released. */
  readonly isLeader: () => boolean;
  /** Completes when we become leader (never, if we never do). */
  readonly leading: Effect.Effect<void>;
  /**
   * Completes when leadership, once acquired, is lost (renewDeadline passed without a renewal, or the
   * Lease was taken). Not on release at scope close. The caller must stop leader-only work at once.
   */
  readonly lost: Effect.Effect<void>;
  readonly status: () => LeaderElectionStatus;
}

/** Invalid timings: a programming error, raised as a defect. */
export class LeaderElectionConfigError extends Data.TaggedError("LeaderElectionConfigError")<{
  readonly message: string;
}> {}

/** The Lease spec fields client-go's LeaderElectionRecord holds; times as the server wrote them. */
interface LeaseRecord {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: string;
  readonly renewTime: string;
  readonly leaseTransitions: number;
}

interface Observation {
  readonly record: LeaseRecord;
  /** The record serialised: a change of any field is a change of the Lease (client-go compares raw records). */
  readonly raw: string;
  /** When we first saw this record (ms, our clock). */
  readonly at: number;
  readonly resourceVersion: string;
}

type Attempt =
  /** We hold the Lease; `at` is our clock when the attempt started. */
  | { readonly _tag: "Held"; readonly at: number }
  /** Someone else holds it and it has not expired. */
  | { readonly _tag: "Taken"; readonly holder: string }
  | { readonly _tag: "Failed"; readonly error: KubeError };

/** client-go's JitterFactor for the acquire loop. */
const jitterFactor = 1.2;

const millis = (input: Duration.Input | undefined, fallback: Duration.Input): number =>
  Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback));

const field = (object: unknown, name: string): unknown =>
  Predicate.isObject(object) ? Reflect.get(object, name) : undefined;
const textField = (object: unknown, name: string): string => {
  const value = field(object, name);
  return typeof value === "string" ? value : "";
};
const numberField = (object: unknown, name: string): number => {
  const value = field(object, name);
  return typeof value === "number" ? value : 0;
};

/** The record of a Lease as the server returned it (JSON). */
const recordOf = (lease: unknown): LeaseRecord => {
  const spec = field(lease, "spec");
  return {
    holderIdentity: textField(spec, "holderIdentity"),
    leaseDurationSeconds: numberField(spec, "leaseDurationSeconds"),
    acquireTime: textField(spec, "acquireTime"),
    renewTime: textField(spec, "renewTime"),
    leaseTransitions: numberField(spec, "leaseTransitions"),
  };
};

export const runLeaderElection = (
  options: LeaderElectionOptions,
): Effect.Effect<LeaderElection, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { namespace, name, identity } = options;
    const leaseMs = millis(options.leaseDuration, Duration.seconds(15));
    const renewDeadlineMs = millis(options.renewDeadline, Duration.seconds(10));
    const retryMs = millis(options.retryPeriod, Duration.seconds(2));
    if (
      !(
        leaseMs >= 1000 &&
        renewDeadlineMs < leaseMs &&
        retryMs > 0 &&
        retryMs * jitterFactor < renewDeadlineMs
      )
    ) {
      return yield* Effect.die(
        new LeaderElectionConfigError({
          message: `need leaseDuration ≥ 1 s > renewDeadline > ${jitterFactor} × retryPeriod > 0 (got ${leaseMs}, ${renewDeadlineMs}, ${retryMs} ms)`,
        }),
      );
    }
    if (identity === "") {
      return yield* Effect.die(new LeaderElectionConfigError({ message: "identity must not be empty" }));
    }
    const leaseDurationSeconds = Math.ceil(leaseMs / 1000);
    const settings: RequestSettings = {
      counter: options.counter ?? new RequestCounter(),
      timeout: Duration.millis(renewDeadlineMs),
    };

    const client = () => kubeClientOf(options.kubeConfigHook?.() ?? options.kubeConfig);
    const leases = { group: "coordination.k8s.io", version: "v1", plural: "leases" };
    const leasePath = apiPath(leases, namespace, name);

    const get = Effect.suspend(() =>
      kubeRequest(settings, "get", client(), { method: "GET", path: leasePath }),
    );
    const create = (spec: Record<string, unknown>) =>
      Effect.suspend(() =>
        kubeRequest(settings, "create", client(), {
          method: "POST",
          path: apiPath(leases, namespace),
          body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { namespace, name }, spec },
        }),
      );
    const update = (resourceVersion: string, spec: Record<string, unknown>) =>
      Effect.suspend(() =>
        kubeRequest(settings, "patch", client(), {
          method: "PATCH",
          path: leasePath,
          body: { metadata: { resourceVersion }, spec },
          contentType: mergePatch,
        }),
      );

    let observed: Observation | undefined;
    let leader = false;
    const leadingSignal = yield* Deferred.make<void>();
    const lostSignal = yield* Deferred.make<void>();

    /** Records what the server holds (a read, or the answer to our write). */
    const observe = (lease: unknown) =>
      Effect.gen(function* () {
        const record = recordOf(lease);
        const raw = JSON.stringify(record);
        const resourceVersion = textField(field(lease, "metadata"), "resourceVersion");
        const at = observed?.raw === raw ? observed.at : yield* Clock.currentTimeMillis;
        observed = { record, raw, at, resourceVersion };
        return observed;
      });

    const unexpired = (observation: Observation, now: number) =>
      observation.at + observation.record.leaseDurationSeconds * 1000 > now;

    const ourSpec = (now: number, acquireTime: string, leaseTransitions: number) => ({
      holderIdentity: identity,
      leaseDurationSeconds,
      acquireTime,
      renewTime: microTime(now),
      leaseTransitions,
    });

    /** client-go's tryAcquireOrRenew. */
    const tryAcquireOrRenew: Effect.Effect<Attempt> = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis;
      // Fast path: renew what we hold without reading it first.
      const current = observed;
      if (
        leader &&
        current !== undefined &&
        current.record.holderIdentity === identity &&
        unexpired(current, now)
      ) {
        const renewed = yield* Effect.option(
          update(
            current.resourceVersion,
            ourSpec(now, current.record.acquireTime, current.record.leaseTransitions),
          ),
        );
        if (Option.isSome(renewed)) {
          yield* observe(renewed.value.body);
          return { _tag: "Held", at: now };
        }
        // Conflict or failure: fall back to reading the Lease.
      }
      const read = yield* Effect.result(get);
      if (read._tag === "Failure") {
        if (read.failure.reason !== "NotFound") return { _tag: "Failed", error: read.failure };
        const created = yield* Effect.result(create(ourSpec(now, microTime(now), 0)));
        if (created._tag === "Failure") return { _tag: "Failed", error: created.failure };
        yield* observe(created.success.body);
        return { _tag: "Held", at: now };
      }
      const seen = yield* observe(read.success.body);
      const holder = seen.record.holderIdentity;
      const ours = holder === identity;
      if (holder !== "" && !ours && unexpired(seen, now)) return { _tag: "Taken", holder };
      const written = yield* Effect.result(
        update(
          seen.resourceVersion,
          ours
            ? ourSpec(now, seen.record.acquireTime, seen.record.leaseTransitions)
            : ourSpec(now, microTime(now), seen.record.leaseTransitions + 1),
        ),
      );
      if (written._tag === "Failure") return { _tag: "Failed", error: written.failure };
      yield* observe(written.success.body);
      return { _tag: "Held", at: now };
    });

    const annotations = { lease: `${namespace}/${name}`, identity };

    const acquire = Effect.gen(function* () {
      while (true) {
        const attempt = yield* tryAcquireOrRenew;
        if (attempt._tag === "Held") return attempt.at;
        if (attempt._tag === "Failed") {
          yield* Effect.logDebug(`leader election: acquire failed: ${attempt.error.message}`);
        }
        const jitter = yield* Random.next;
        yield* Effect.sleep(Duration.millis(retryMs * (1 + jitter * jitterFactor)));
      }
    });

    /**
     * Renews until it fails; returns why leadership is lost. Periodic on purpose (every retryPeriod,
     * 2 s by default as client-go's): a standby takes the Lease leaseDuration after the last renewal.
     */
    const renewUntilLost = (acquiredAt: number) =>
      Effect.gen(function* () {
        let lastRenewal = acquiredAt;
        while (true) {
          yield* Effect.sleep(Duration.millis(retryMs));
          const deadline = lastRenewal + renewDeadlineMs;
          let renewed = false;
          while (!renewed) {
            const now = yield* Clock.currentTimeMillis;
            if (now >= deadline) return `not renewed within ${renewDeadlineMs} ms`;
            const attempt = yield* Effect.timeoutOption(tryAcquireOrRenew, Duration.millis(deadline - now));
            if (Option.isNone(attempt)) return `not renewed within ${renewDeadlineMs} ms`;
            const result = attempt.value;
            if (result._tag === "Taken") return `the lease is held by ${result.holder}`;
            if (result._tag === "Held") {
              lastRenewal = result.at;
              renewed = true;
            } else {
              yield* Effect.logWarning(`leader election: renewal failed: ${result.error.message}`);
              const after = yield* Clock.currentTimeMillis;
              yield* Effect.sleep(Duration.millis(Math.max(0, Math.min(retryMs, deadline - after))));
            }
          }
        }
      });

    const run = Effect.gen(function* () {
      const acquiredAt = yield* acquire;
      leader = true;
      yield* Effect.logInfo("leader election: acquired the lease");
      yield* Deferred.succeed(leadingSignal, undefined);
      const reason = yield* renewUntilLost(acquiredAt);
      leader = false;
      yield* Effect.logWarning(`leader election: leadership lost: ${reason}`);
      yield* Deferred.succeed(lostSignal, undefined);
    }).pipe(Effect.annotateLogs(annotations));

    /** ReleaseOnCancel: give the Lease up (only if we hold it), so that a successor need not wait. */
    const release = Effect.gen(function* () {
      const wasLeader = leader;
      leader = false;
      const current = observed;
      if (!wasLeader || options.releaseOnCancel === false || current === undefined) return;
      if (current.record.holderIdentity !== identity) return;
      const now = yield* Clock.currentTimeMillis;
      const spec = {
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: microTime(now),
        renewTime: microTime(now),
        leaseTransitions: current.record.leaseTransitions,
      };
      const first = yield* Effect.result(update(current.resourceVersion, spec));
      if (first._tag === "Success") {
        yield* observe(first.success.body);
      } else if (first.failure.reason === "Conflict") {
        // An interrupted renewal may have changed the Lease after all: release it if it is still ours.
        const read = yield* get;
        const seen = yield* observe(read.body);
        if (seen.record.holderIdentity === identity) {
          yield* observe((yield* update(seen.resourceVersion, spec)).body);
        }
      } else {
        return yield* first.failure;
      }
      yield* Effect.logInfo("leader election: released the lease");
    }).pipe(
      Effect.timeoutOrElse({
        duration: Duration.millis(renewDeadlineMs),
        orElse: () => Effect.logWarning("leader election: release timed out"),
      }),
      Effect.catch((error) => Effect.logWarning(`leader election: release failed: ${error.message}`)),
      Effect.annotateLogs(annotations),
    );

    // Finalizers run last-added first: the loop is interrupted before the release runs.
    yield* Effect.addFinalizer(() => release);
    yield* Effect.forkScoped(run);

    return {
      isLeader: () => leader,
      leading: Deferred.await(leadingSignal),
      lost: Deferred.await(lostSignal),
      status: () => {
        const holder = observed?.record.holderIdentity ?? "";
        return {
          leader,
          transitions: observed?.record.leaseTransitions ?? 0,
          ...(holder === "" ? {} : { holder }),
        };
      },
    } satisfies LeaderElection;
  });
