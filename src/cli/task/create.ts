/**
 * `snapshot` and `maintain`: build an EtcdOpsTask from flags, check it with the same schema the
 * controller decodes with (so a bad combination is a usage error here, not a rejected task there),
 * create it, print its name, and with `--wait` follow it to its end.
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import { OnDemandMaintenanceLimits } from "../../etcd/api/config/on-demand-maintenance.ts";
import { OnDemandSnapshotLimits, SnapshotTypes } from "../../etcd/api/config/on-demand-snapshot.ts";
import { GoDurationPattern, RecoveryAnnotations } from "../../etcd/api/config/recover-from-quorum-loss.ts";
import { ApiVersion, decodeEtcdOpsTaskManifest, Kind, TtlLimits } from "../../etcd/api/etcdopstask.ts";
import type { KubeError } from "../../kube/errors.ts";
import { OptionError } from "../options.ts";
import { booleanFlag, type Flags, secondsFlag, stringFlag, waitTimeoutMs } from "./args.ts";
import { type Cluster, createTask } from "./cluster.ts";
import type { TaskIo } from "./io.ts";
import { waitForTask } from "./wait.ts";

/** Flags of both create commands. */
export const createFlags = {
  ttl: { type: "string" },
  timeout: { type: "string" },
  name: { type: "string" },
  wait: { type: "boolean" },
  "wait-timeout": { type: "string" },
} as const;

export const snapshotFlags = {
  ...createFlags,
  type: { type: "string" },
  final: { type: "boolean" },
} as const;
export const recoverQuorumFlags = {
  ...createFlags,
  yes: { type: "boolean", short: "y" },
  "scale-down-timeout": { type: "string" },
  "pod-ready-timeout": { type: "string" },
  "etcd-ready-timeout": { type: "string" },
  "allow-data-loss": { type: "boolean" },
} as const;
export const maintainFlags = {
  ...createFlags,
  compact: { type: "boolean" },
  physical: { type: "boolean" },
  defrag: { type: "boolean" },
} as const;

const dnsSubdomain = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

interface Common {
  readonly etcd: string;
  readonly flags: Flags;
  /** The generateName suffix after `<etcd>-`, e.g. `snapshot`. */
  readonly purpose: string;
}

/** No namespace: the request's path says where the task goes. */
const metadataOf = ({ etcd, flags, purpose }: Common) => {
  const name = stringFlag(flags, "name");
  if (name !== undefined && (!dnsSubdomain.test(name) || name.length > 253))
    throw new OptionError(
      `invalid value "${name}" for --name: expected a DNS subdomain name (a-z, 0-9, -, .)`,
    );
  return name !== undefined ? { name } : { generateName: `${etcd}-${purpose}-` };
};

const ttlOf = (flags: Flags) => {
  const ttl = secondsFlag(flags, "ttl", TtlLimits.minimum, "(time a finished task is kept)");
  return ttl === undefined ? {} : { ttlSecondsAfterFinished: ttl };
};

/** Checks the manifest with the controller's own schema; a failure is a usage error. */
const checked = (manifest: object): object => {
  const decoded = decodeEtcdOpsTaskManifest(manifest);
  if (Result.isFailure(decoded))
    throw new OptionError(`the task would be invalid: ${decoded.failure.errors.join("; ")}`);
  // Sent as written: the API server applies the CRD's defaults itself.
  return manifest;
};

/** The `onDemandSnapshot` task `snapshot <etcd> --type full|delta …` asks for. */
export const snapshotManifest = (etcd: string, flags: Flags): object => {
  const type = stringFlag(flags, "type");
  if (type === undefined) throw new OptionError(`missing --type: expected ${SnapshotTypes.join(" | ")}`);
  if (type !== "full" && type !== "delta")
    throw new OptionError(`invalid value "${type}" for --type: expected ${SnapshotTypes.join(" | ")}`);
  const final = booleanFlag(flags, "final");
  if (final && type !== "full")
    throw new OptionError("--final applies only to --type full: a final snapshot is always a full one");
  const limits =
    type === "full" ? OnDemandSnapshotLimits.timeoutSecondsFull : OnDemandSnapshotLimits.timeoutSecondsDelta;
  const timeout = secondsFlag(flags, "timeout", limits.minimum, `for a ${type} snapshot`);
  return checked({
    apiVersion: ApiVersion,
    kind: Kind,
    metadata: metadataOf({ etcd, flags, purpose: "snapshot" }),
    spec: {
      etcdName: etcd,
      ...ttlOf(flags),
      config: {
        onDemandSnapshot: {
          type,
          ...(final ? { isFinal: true } : {}),
          ...(timeout === undefined
            ? {}
            : type === "full"
              ? { timeoutSecondsFull: timeout }
              : { timeoutSecondsDelta: timeout }),
        },
      },
    },
  });
};

/** The `onDemandMaintenance` task `maintain <etcd> [--compact [--physical]] [--defrag] …` asks for. */
export const maintenanceManifest = (etcd: string, flags: Flags): object => {
  const compact = booleanFlag(flags, "compact");
  const defrag = booleanFlag(flags, "defrag");
  const physical = booleanFlag(flags, "physical");
  if (!compact && !defrag)
    throw new OptionError("nothing to do: expected --compact, --defrag, or both (compaction runs first)");
  if (physical && !compact)
    throw new OptionError(
      "--physical applies only with --compact: it makes the compaction wait until applied",
    );
  const timeout = secondsFlag(
    flags,
    "timeout",
    OnDemandMaintenanceLimits.timeoutSeconds.minimum,
    "(per call to etcd)",
  );
  return checked({
    apiVersion: ApiVersion,
    kind: Kind,
    metadata: metadataOf({ etcd, flags, purpose: "maintenance" }),
    spec: {
      etcdName: etcd,
      ...ttlOf(flags),
      config: {
        onDemandMaintenance: {
          ...(compact ? { compaction: physical ? { physical: true } : {} } : {}),
          ...(defrag ? { defragmentation: {} } : {}),
          ...(timeout === undefined ? {} : { timeoutSeconds: timeout }),
        },
      },
    },
  });
};

const durationFlag = (flags: Flags, name: string): string | undefined => {
  const value = stringFlag(flags, name);
  if (value !== undefined && !GoDurationPattern.test(value))
    throw new OptionError(
      `invalid value "${value}" for --${name}: expected a duration such as 60s, 3m or 1m30s`,
    );
  return value;
};

/**
 * The `recoverFromQuorumLoss` task `recover-quorum <etcd> …` asks for, confirmed: the user answered the
 * prompt (or passed `--yes`), so it carries druid's confirmation annotation and runs without waiting.
 */
export const recoverQuorumManifest = (etcd: string, flags: Flags): object => {
  if (stringFlag(flags, "timeout") !== undefined)
    throw new OptionError(
      "--timeout does not apply to recover-quorum: use --scale-down-timeout, --pod-ready-timeout or --etcd-ready-timeout",
    );
  const scaleDownTimeout = durationFlag(flags, "scale-down-timeout");
  const podReadyTimeout = durationFlag(flags, "pod-ready-timeout");
  const etcdReadyTimeout = durationFlag(flags, "etcd-ready-timeout");
  return checked({
    apiVersion: ApiVersion,
    kind: Kind,
    metadata: {
      ...metadataOf({ etcd, flags, purpose: "recover-quorum" }),
      annotations: { [RecoveryAnnotations.confirm]: "true" },
    },
    spec: {
      etcdName: etcd,
      ...ttlOf(flags),
      config: {
        recoverFromQuorumLoss: {
          ...(scaleDownTimeout === undefined ? {} : { scaleDownTimeout }),
          ...(podReadyTimeout === undefined ? {} : { podReadyTimeout }),
          ...(etcdReadyTimeout === undefined ? {} : { etcdReadyTimeout }),
          ...(booleanFlag(flags, "allow-data-loss") ? { allowDataLoss: true } : {}),
        },
      },
    },
  });
};

export interface CreateOptions {
  readonly cluster: Cluster;
  readonly namespace: string;
  readonly manifest: object;
  /** Follow the task to its end (`--wait`), for at most this long; undefined: print the name and return. */
  readonly waitTimeoutMs: number | undefined;
  readonly io: TaskIo;
}

/** `--wait-timeout` means nothing without `--wait`; undefined when not waiting. */
export const waitSettings = (flags: Flags, io: TaskIo): number | undefined => {
  if (!booleanFlag(flags, "wait")) {
    if (stringFlag(flags, "wait-timeout") !== undefined)
      throw new OptionError("--wait-timeout applies only with --wait");
    return undefined;
  }
  return waitTimeoutMs(flags, io.env);
};

export const createAndMaybeWait = (options: CreateOptions): Effect.Effect<number, KubeError> =>
  Effect.gen(function* () {
    const created = yield* createTask(options.cluster, options.namespace, options.manifest);
    options.io.stdout.write(`${created.metadata.name}\n`);
    if (options.waitTimeoutMs === undefined) return 0;
    return yield* waitForTask({
      cluster: options.cluster,
      task: created,
      timeoutMs: options.waitTimeoutMs,
      io: options.io,
    });
  });
