/**
 * `spec.config.recoverFromQuorumLoss` (experimental): recovery of a multi-member etcd cluster from a
 * permanent quorum loss, as etcd-druid's pull request #1358 declared it before it was closed unmerged
 * (its last revision, e541fbcc): four
 * optional fields, the timeouts as Go duration strings with druid's pattern and no CRD default (the
 * defaults are the handler's: 60s, 180s, 300s), so that a task written for druid's member is accepted
 * and read alike. docs/contract.md §15 is the member's contract.
 */
import * as Schema from "effect/Schema";
import { stepAnnotations } from "../../../advanced.ts";
import type { Assignable } from "../assignable.ts";

export const RecoverFromQuorumLossMember = "recoverFromQuorumLoss";

/** druid's annotation names (api/core/v1alpha1/constants.go and the pull request's handler). */
export const RecoveryAnnotations = {
  progressPrefix: "druid.gardener.cloud/quorum-recovery",
  confirm: "druid.gardener.cloud/confirm-recovery",
  suspendReconcile: "druid.gardener.cloud/suspend-etcd-spec-reconcile",
  disableProtection: "druid.gardener.cloud/disable-etcd-component-protection",
  operation: "druid.gardener.cloud/operation",
} as const;

/**
 * The task annotations the cache keeps: the confirmation, which step 1 reads, and the progress
 * annotations (a mirror, never read back), so that Admit sees a task created with them.
 */
export const recoveryTaskAnnotations: ReadonlyArray<string> = [
  ...Object.values(stepAnnotations(RecoveryAnnotations.progressPrefix)),
  RecoveryAnnotations.confirm,
];

/** etcd-druid's kubebuilder pattern for `metav1.Duration` fields (a Go duration). */
export const GoDurationPattern = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/u;

/** The defaults of druid's handler, in ms. */
export const RecoverFromQuorumLossDefaults = {
  scaleDownTimeoutMs: 60_000,
  podReadyTimeoutMs: 180_000,
  etcdReadyTimeoutMs: 300_000,
} as const;

const unitMs: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Milliseconds of a Go duration string that matches `GoDurationPattern` (`1m30s` → 90000). */
export const goDurationMs = (text: string): number => {
  let total = 0;
  for (const [, amount, , unit] of text.matchAll(/([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/gu))
    total += Number(amount) * (unitMs[unit ?? "s"] ?? 0);
  return total;
};

const duration = (description: string) =>
  Schema.optionalKey(
    Schema.String.check(Schema.isPattern(GoDurationPattern)).annotate({
      description: `${description}\nA Go duration (e.g. 30s, 2m).`,
    }),
  );

const fields = {
  scaleDownTimeout: duration(
    "ScaleDownTimeout is the timeout to wait for the StatefulSet to fully scale down to 0 replicas\n" +
      "during quorum loss recovery. Defaults to 60 seconds.",
  ),
  podReadyTimeout: duration(
    "PodReadyTimeout is the timeout to wait for the single-member etcd pod (ordinal 0) to become\n" +
      "ready after the StatefulSet is scaled up to 1 during quorum loss recovery.\nDefaults to 180 seconds.",
  ),
  etcdReadyTimeout: duration(
    "EtcdReadyTimeout is the timeout to wait for all etcd cluster members to become ready\n" +
      "(the AllMembersReady condition reports True) after etcd-druid reconciliation has been\n" +
      "re-enabled at the end of the recovery flow. Defaults to 300 seconds (5 minutes).",
  ),
  allowDataLoss: Schema.optionalKey(
    Schema.Boolean.annotate({
      description:
        "AllowDataLoss permits the recovery to proceed even when no backup store is configured for the\n" +
        "referenced Etcd, or its backup is not Ready: the rebuilt cluster may then start empty or stale.\n" +
        "When unset (or false), the task is rejected in those cases.",
    }),
  ),
};

/** The member's body under `spec.config.recoverFromQuorumLoss`; opstask's CRD declares it from this. */
export const RecoverFromQuorumLossBody = Schema.Struct(fields).annotate({
  description:
    "RecoverFromQuorumLoss defines the configuration for a task that recovers\n" +
    "a multi-member etcd cluster from a permanent quorum loss.\n" +
    "Experimental: opstask's own member, after etcd-druid pull request #1358, which was closed\n" +
    "without being merged (etcd-druid issue #1230 is open). No etcd-druid release declares it, and a\n" +
    "future one may declare it differently.",
});

/** The decoded config: the fields as written (their defaults are the handler's, `timeoutsOf`). */
export interface RecoverFromQuorumLossConfig {
  readonly kind: typeof RecoverFromQuorumLossMember;
  readonly scaleDownTimeout?: string;
  readonly podReadyTimeout?: string;
  readonly etcdReadyTimeout?: string;
  readonly allowDataLoss?: boolean;
}

export const RecoverFromQuorumLossConfigSchema = Schema.Struct({
  kind: Schema.Literal(RecoverFromQuorumLossMember),
  ...fields,
});

export type RecoverFromQuorumLossConfigMatchesSchema = [
  Assignable<typeof RecoverFromQuorumLossConfigSchema.Type, RecoverFromQuorumLossConfig>,
  Assignable<RecoverFromQuorumLossConfig, typeof RecoverFromQuorumLossConfigSchema.Type>,
];

/** The three waits' deadlines in ms, defaulted as druid's handler does. */
export const timeoutsOf = (config: RecoverFromQuorumLossConfig) => ({
  scaleDownMs:
    config.scaleDownTimeout === undefined
      ? RecoverFromQuorumLossDefaults.scaleDownTimeoutMs
      : goDurationMs(config.scaleDownTimeout),
  podReadyMs:
    config.podReadyTimeout === undefined
      ? RecoverFromQuorumLossDefaults.podReadyTimeoutMs
      : goDurationMs(config.podReadyTimeout),
  etcdReadyMs:
    config.etcdReadyTimeout === undefined
      ? RecoverFromQuorumLossDefaults.etcdReadyTimeoutMs
      : goDurationMs(config.etcdReadyTimeout),
});
