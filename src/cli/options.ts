/**
 * The controller's options: one table, read from flags, then environment, then a YAML config file,
 * then the default. A bad value stops start-up with a message that names the option, where it came
 * from, and what is accepted. The config file is read first (`loadControllerOptions`): its YAML parser
 * is loaded only when a file is named, so a controller configured by flags never holds it.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { isImageReference } from "../etcd/on-demand-snapshot-compaction/image-policy.ts";
import { DefaultCompactionImage } from "../etcd/on-demand-snapshot-compaction/job-spec.ts";
import { DefaultMaxTaskBytes } from "../reconcile/oversized-task.ts";
import { parseYamlText } from "../yaml-text.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

export type Source = "flag" | "env" | "config" | "default";

export class OptionError extends Error {
  override readonly name = "OptionError";
}

interface Spec<A> {
  readonly flag: string;
  readonly env: string;
  readonly help: string;
  /** Shown in `--help` and in errors: what is accepted. */
  readonly accepts: string;
  readonly multiple?: boolean;
  readonly boolean?: boolean;
  readonly fallback: A;
  readonly parse: (raw: string) => A | undefined;
}

const durationPattern = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;
const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `250ms`, `15s`, `2m`, `1h` → milliseconds. */
export const parseDuration = (raw: string): number | undefined => {
  const match = durationPattern.exec(raw.trim());
  if (match === null) return undefined;
  const [, amount, unit] = match;
  return Number(amount) * (units[unit ?? "ms"] ?? 1);
};

const byteUnits: Record<string, number> = { "": 1, Ki: 1024, Mi: 1024 * 1024 };

/** `65536`, `64Ki`, `1Mi` → bytes; at least 4 KiB (a task's stub must fit in half of it). */
export const parseByteSize = (raw: string): number | undefined => {
  const match = /^(\d{1,10})(Ki|Mi)?$/.exec(raw.trim());
  if (match === null) return undefined;
  const bytes = Number(match[1]) * (byteUnits[match[2] ?? ""] ?? 1);
  return bytes >= 4096 && Number.isSafeInteger(bytes) ? bytes : undefined;
};

const positiveInt = (raw: string): number | undefined =>
  /^\d+$/.test(raw) && Number(raw) >= 1 ? Number(raw) : undefined;
const address = (raw: string): string | undefined =>
  raw === "0" || /^([\w.-]*|\[[\da-fA-F:]+\]):\d{1,5}$/.test(raw) ? raw : undefined;
const oneOf =
  <const T extends string>(...values: T[]) =>
  (raw: string): T | undefined =>
    (values as string[]).includes(raw) ? (raw as T) : undefined;

export interface ResolveRule {
  readonly host: string;
  readonly port: number | "*";
  readonly address: string;
}

/** curl's `--resolve HOST:PORT:ADDRESS` (PORT may be `*`; an IPv6 ADDRESS in brackets). */
export const parseResolve = (raw: string): ResolveRule | undefined => {
  const match = /^([^:]+):(\*|\d{1,5}):(\[[\da-fA-F:]+\]|[^:]+)$/.exec(raw);
  if (match === null) return undefined;
  const [, host, port, target] = match;
  if (host === undefined || port === undefined || target === undefined) return undefined;
  return { host, port: port === "*" ? "*" : Number(port), address: target.replace(/^\[|\]$/g, "") };
};

export const controllerOptionSpecs = {
  kubeconfig: {
    flag: "kubeconfig",
    env: "KUBECONFIG",
    help: "kubeconfig file (default: in-cluster, then ~/.kube/config)",
    accepts: "a path",
    fallback: "",
    parse: (raw: string) => raw,
  } satisfies Spec<string>,
  namespaces: {
    flag: "namespace",
    env: "OPSTASK_NAMESPACES",
    help: "namespaces to watch, repeatable or comma-separated (default: all)",
    accepts: "namespace names",
    multiple: true,
    fallback: [] as string[],
    parse: (raw: string) =>
      raw.split(",").every((n) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n)) ? raw.split(",") : undefined,
  } satisfies Spec<string[]>,
  concurrency: {
    flag: "concurrency",
    env: "OPSTASK_CONCURRENCY",
    help: "passes run at once (handler calls do not count)",
    accepts: "an integer ≥ 1",
    fallback: 3,
    parse: positiveInt,
  } satisfies Spec<number>,
  requeueInterval: {
    flag: "requeue-interval",
    env: "OPSTASK_REQUEUE_INTERVAL",
    help: "poll interval of waiting tasks",
    accepts: "a duration such as 15s",
    fallback: 15_000,
    parse: parseDuration,
  } satisfies Spec<number>,
  backoffBase: {
    flag: "backoff-base",
    env: "OPSTASK_BACKOFF_BASE",
    help: "first delay after a transient error, doubled per retry",
    accepts: "a duration such as 10ms",
    fallback: 10,
    parse: parseDuration,
  } satisfies Spec<number>,
  backoffCap: {
    flag: "backoff-cap",
    env: "OPSTASK_BACKOFF_CAP",
    help: "longest delay after transient errors (default: the requeue interval)",
    accepts: "a duration such as 15s",
    fallback: 0,
    parse: parseDuration,
  } satisfies Spec<number>,
  duplicatePolicy: {
    flag: "duplicate-policy",
    env: "OPSTASK_DUPLICATE_POLICY",
    help: "a second task for a busy etcd: reject it (druid) or queue it (FIFO)",
    accepts: "reject | queue",
    fallback: "reject" as "reject" | "queue",
    parse: oneOf("reject", "queue"),
  } satisfies Spec<"reject" | "queue">,
  phaseDeadline: {
    flag: "phase-deadline",
    env: "OPSTASK_PHASE_DEADLINE",
    help: "end a phase that keeps failing transiently after this long (default: off)",
    accepts: "a duration such as 30m",
    fallback: 0,
    parse: parseDuration,
  } satisfies Spec<number>,
  queueDeadline: {
    flag: "queue-deadline",
    env: "OPSTASK_QUEUE_DEADLINE",
    help: "fail a task queued behind a peer for longer than this, ERR_QUEUE_TIMEOUT (--duplicate-policy queue; 0: off)",
    accepts: "a duration such as 6h",
    fallback: 6 * 60 * 60 * 1000,
    parse: parseDuration,
  } satisfies Spec<number>,
  handlerDefectLimit: {
    flag: "handler-defect-limit",
    env: "OPSTASK_HANDLER_DEFECT_LIMIT",
    help: "fail a task whose handler threw (a bug, logged with its stack) this many times in one phase",
    accepts: "an integer ≥ 1",
    fallback: 5,
    parse: positiveInt,
  } satisfies Spec<number>,
  resolve: {
    flag: "resolve",
    env: "OPSTASK_RESOLVE",
    help: "dial ADDRESS for HOST:PORT (curl semantics; TLS still verifies HOST), repeatable",
    accepts: "HOST:PORT:ADDRESS, PORT may be *",
    multiple: true,
    fallback: [] as ResolveRule[],
    parse: (raw: string) => {
      const rules = raw.split(",").map(parseResolve);
      return rules.every((r) => r !== undefined) ? (rules as ResolveRule[]) : undefined;
    },
  } satisfies Spec<ResolveRule[]>,
  compactionImage: {
    flag: "compaction-image",
    env: "OPSTASK_COMPACTION_IMAGE",
    help: "etcd-backup-restore image of snapshot compaction Jobs (pin it by digest)",
    accepts: "an image reference such as registry/etcdbrctl:v0.43.0@sha256:<digest>",
    fallback: DefaultCompactionImage,
    parse: (raw: string) => (isImageReference(raw) ? raw : undefined),
  } satisfies Spec<string>,
  compactionAllowedImages: {
    flag: "compaction-allowed-images",
    env: "OPSTASK_COMPACTION_ALLOWED_IMAGES",
    help: "further images a task may name in onDemandSnapshotCompaction.image, repeatable (default: none)",
    accepts: "image references, comma-separated",
    multiple: true,
    fallback: [] as string[],
    parse: (raw: string) => (raw.split(",").every(isImageReference) ? raw.split(",") : undefined),
  } satisfies Spec<string[]>,
  maxTaskBytes: {
    flag: "max-task-bytes",
    env: "OPSTASK_MAX_TASK_BYTES",
    help: "the most one task may hold in the controller's cache; a larger task is Rejected (ERR_TASK_TOO_LARGE)",
    accepts: "a size of at least 4Ki, in bytes or with Ki or Mi, such as 64Ki",
    fallback: DefaultMaxTaskBytes,
    parse: parseByteSize,
  } satisfies Spec<number>,
  metricsAddress: {
    flag: "metrics-address",
    env: "OPSTASK_METRICS_ADDRESS",
    help: "where /metrics is served (0: off; default :8443 when secure, else :8080)",
    accepts: "HOST:PORT, :PORT or 0",
    fallback: ":8443",
    parse: address,
  } satisfies Spec<string>,
  // Secure by default (as kubebuilder's scaffold of controller-runtime; etcd-druid serves plain HTTP):
  // the metrics name namespaces and Etcds, and the listener is not loopback in a pod.
  metricsSecure: {
    flag: "metrics-secure",
    env: "OPSTASK_METRICS_SECURE",
    help: "serve /metrics over HTTPS to callers the apiserver authenticates and authorises (get /metrics)",
    accepts: "true | false",
    fallback: true,
    parse: (raw: string) => (raw === "true" ? true : raw === "false" ? false : undefined),
  } satisfies Spec<boolean>,
  metricsTlsCertFile: {
    flag: "metrics-tls-cert-file",
    env: "OPSTASK_METRICS_TLS_CERT_FILE",
    help: "PEM certificate for secure metrics, re-read when it changes (default: self-signed at start)",
    accepts: "a path, with --metrics-tls-key-file",
    fallback: "",
    parse: (raw: string) => raw,
  } satisfies Spec<string>,
  metricsTlsKeyFile: {
    flag: "metrics-tls-key-file",
    env: "OPSTASK_METRICS_TLS_KEY_FILE",
    help: "PEM private key of --metrics-tls-cert-file",
    accepts: "a path, with --metrics-tls-cert-file",
    fallback: "",
    parse: (raw: string) => raw,
  } satisfies Spec<string>,
  probeAddress: {
    flag: "probe-address",
    env: "OPSTASK_PROBE_ADDRESS",
    help: "where /healthz and /readyz are served (0: off)",
    accepts: "HOST:PORT, :PORT or 0",
    fallback: ":8081",
    parse: address,
  } satisfies Spec<string>,
  leaderElect: {
    flag: "leader-elect",
    env: "OPSTASK_LEADER_ELECT",
    help: "run only while holding a Lease, so that replicas can stand by",
    accepts: "true | false (the flag alone means true)",
    boolean: true,
    fallback: false,
    parse: (raw: string) => (raw === "true" ? true : raw === "false" ? false : undefined),
  } satisfies Spec<boolean>,
  leaderElectionNamespace: {
    flag: "leader-election-namespace",
    env: "OPSTASK_LEADER_ELECTION_NAMESPACE",
    help: "namespace of the Lease (default: the pod's namespace, else default)",
    accepts: "a namespace name",
    fallback: "",
    parse: (raw: string) => (/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(raw) ? raw : undefined),
  } satisfies Spec<string>,
  leaderElectionId: {
    flag: "leader-election-id",
    env: "OPSTASK_LEADER_ELECTION_ID",
    help: "name of the Lease",
    accepts: "a DNS subdomain name",
    fallback: "opstask-controller",
    parse: (raw: string) => (/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(raw) ? raw : undefined),
  } satisfies Spec<string>,
  inspect: {
    flag: "inspect",
    env: "OPSTASK_INSPECT",
    help: "stream every task's machine to the Stately inspector (open http://127.0.0.1:<inspect-port>/)",
    accepts: "true | false (the flag alone means true)",
    boolean: true,
    fallback: false,
    parse: (raw: string) => (raw === "true" ? true : raw === "false" ? false : undefined),
  } satisfies Spec<boolean>,
  inspectPort: {
    flag: "inspect-port",
    env: "OPSTASK_INSPECT_PORT",
    help: "port of the inspector relay on 127.0.0.1",
    accepts: "a port number",
    fallback: 9090,
    parse: (raw: string) => (/^\d{1,5}$/.test(raw) && Number(raw) < 65536 ? Number(raw) : undefined),
  } satisfies Spec<number>,
  ui: {
    flag: "ui",
    env: "OPSTASK_UI",
    help: "serve the live task board here and print its URL with a token (0: off; PORT alone is loopback)",
    accepts: "HOST:PORT, :PORT, PORT or 0",
    fallback: "0",
    parse: (raw: string) => (/^((\[[\da-fA-F:]+\]|[\w.-]+)?:)?\d{1,5}$/.test(raw) ? raw : undefined),
  } satisfies Spec<string>,
  logLevel: {
    flag: "log-level",
    env: "OPSTASK_LOG_LEVEL",
    help: "least severe log level shown",
    accepts: "debug | info | warn | error",
    fallback: "info" as "debug" | "info" | "warn" | "error",
    parse: oneOf("debug", "info", "warn", "error"),
  } satisfies Spec<"debug" | "info" | "warn" | "error">,
  logFormat: {
    flag: "log-format",
    env: "OPSTASK_LOG_FORMAT",
    help: "log line format",
    accepts: "json | text",
    fallback: "json" as "json" | "text",
    parse: oneOf("json", "text"),
  } satisfies Spec<"json" | "text">,
} as const;

type Specs = typeof controllerOptionSpecs;
export type ControllerOptions = { readonly [K in keyof Specs]: Specs[K]["fallback"] } & {
  readonly sources: { readonly [K in keyof Specs]: Source };
};

const configKey = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A config file as read: its path and what its YAML holds. */
export interface ConfigFile {
  readonly path: string;
  readonly document: unknown;
}

/** The config file `--config` (or `OPSTASK_CONFIG`) names, read and parsed; undefined when none is. */
export const readConfigFile = async (
  argv: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ConfigFile | undefined> => {
  // Only --config is looked at here; readControllerOptions reports every other flag's problems.
  const { values } = parseArgs({
    args: [...argv],
    options: { config: { type: "string" } },
    strict: false,
    allowPositionals: true,
  });
  const path = typeof values.config === "string" ? values.config : env.OPSTASK_CONFIG;
  if (path === undefined) return undefined;
  try {
    return { path, document: await parseYamlText(readFileSync(path, "utf8")) };
  } catch (error) {
    throw new OptionError(`config file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
};

/** The options from flags, environment and the config file they name (`readConfigFile`). */
export const loadControllerOptions = async (
  argv: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ControllerOptions> => readControllerOptions(argv, env, await readConfigFile(argv, env));

/**
 * Reads the options. `argv` are the subcommand's arguments; `--config FILE` (or `OPSTASK_CONFIG`)
 * names a YAML file whose keys are the flags in camelCase (`requeueInterval: 5s`), read beforehand
 * by `readConfigFile` and given as `configFile` (`loadControllerOptions` does both).
 */
export const readControllerOptions = (
  argv: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = process.env,
  configFile?: ConfigFile,
): ControllerOptions => {
  const flagOptions: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {
    config: { type: "string" },
  };
  for (const spec of Object.values(controllerOptionSpecs)) {
    flagOptions[spec.flag] = {
      type: "boolean" in spec && spec.boolean ? "boolean" : "string",
      ...("multiple" in spec && spec.multiple ? { multiple: true } : {}),
    };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], options: flagOptions, strict: true, allowPositionals: false });
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask controller --help'`);
  }
  const configPath = (parsed.values.config as string | undefined) ?? env.OPSTASK_CONFIG;
  let config: Record<string, unknown> = {};
  if (configPath !== undefined) {
    if (configFile?.path !== configPath)
      throw new OptionError(
        `config file ${configPath}: not read (read the options with loadControllerOptions)`,
      );
    const loaded = configFile.document;
    if (loaded !== null && typeof loaded === "object" && !Array.isArray(loaded))
      config = loaded as Record<string, unknown>;
    else
      throw new OptionError(`config file ${configPath}: expected a YAML mapping of option names to values`);
    const known = new Set(Object.values(controllerOptionSpecs).map((spec) => configKey(spec.flag)));
    for (const key of Object.keys(config)) {
      if (!known.has(key))
        throw new OptionError(
          `config file ${configPath}: unknown option "${key}" (known: ${[...known].join(", ")})`,
        );
    }
  }
  const values: Record<string, unknown> = {};
  const sources: Record<string, Source> = {};
  for (const [name, spec] of Object.entries(controllerOptionSpecs) as Array<[keyof Specs, Spec<unknown>]>) {
    const fromFlag = parsed.values[spec.flag];
    const fromEnv = env[spec.env];
    const fromConfig = config[configKey(spec.flag)];
    const [raw, source]: [string | undefined, Source] =
      fromFlag !== undefined
        ? [Array.isArray(fromFlag) ? fromFlag.join(",") : String(fromFlag), "flag"]
        : fromEnv !== undefined && fromEnv !== ""
          ? [fromEnv, "env"]
          : fromConfig !== undefined
            ? [Array.isArray(fromConfig) ? fromConfig.map(String).join(",") : String(fromConfig), "config"]
            : [undefined, "default"];
    if (raw === undefined) {
      values[name] = spec.fallback;
      sources[name] = "default";
      continue;
    }
    const value = spec.parse(raw);
    if (value === undefined) {
      const where =
        source === "flag"
          ? `--${spec.flag}`
          : source === "env"
            ? `$${spec.env}`
            : `${configKey(spec.flag)} in ${configPath}`;
      throw new OptionError(`invalid value "${raw}" for ${where}: expected ${spec.accepts}`);
    }
    values[name] = value;
    sources[name] = source;
  }
  if (values.backoffCap === 0) values.backoffCap = values.requeueInterval;
  checkMetricsServing(values, sources);
  return {
    ...(values as { [K in keyof Specs]: Specs[K]["fallback"] }),
    sources: sources as ControllerOptions["sources"],
  };
};

/** Secure metrics: the default address by mode, a whole certificate pair, a port of its own. */
const checkMetricsServing = (values: Record<string, unknown>, sources: Record<string, Source>): void => {
  if (sources.metricsAddress === "default" && values.metricsSecure === false) values.metricsAddress = ":8080";
  if ((values.metricsTlsCertFile === "") !== (values.metricsTlsKeyFile === ""))
    throw new OptionError(
      "--metrics-tls-cert-file and --metrics-tls-key-file go together: give both, or neither for a self-signed certificate",
    );
  if (values.metricsTlsCertFile !== "" && values.metricsSecure === false)
    throw new OptionError(
      "--metrics-tls-cert-file needs --metrics-secure=true (plain metrics use no certificate)",
    );
  if (
    values.metricsSecure === true &&
    values.metricsAddress !== "0" &&
    values.metricsAddress === values.probeAddress
  )
    throw new OptionError(
      `--metrics-address and --probe-address are both ${String(values.probeAddress)}: secure metrics (HTTPS) need a port of their own; the probes stay plain HTTP for the kubelet`,
    );
};

export const controllerHelp = (): string =>
  [
    "Usage: opstask controller [options]",
    "",
    "Every option can also come from an environment variable or a YAML config file (--config FILE,",
    "keys in camelCase). Flags win over the environment, which wins over the file.",
    "",
    ...Object.values(controllerOptionSpecs).map(
      (spec) =>
        `  --${spec.flag.padEnd(18)} ${spec.help}\n  ${"".padEnd(20)} ${spec.accepts}; env ${spec.env}`,
    ),
    `  --${"config".padEnd(18)} YAML file with any of the above; env OPSTASK_CONFIG`,
  ].join("\n");
