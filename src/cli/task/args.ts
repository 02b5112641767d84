/**
 * The arguments the task commands share: flag parsing, the cluster and namespace to talk to, and the
 * numeric options. Flags win over the environment, which wins over the defaults; a bad value throws
 * `OptionError` naming the option and what is accepted (exit code 2).
 */
import { parseArgs } from "node:util";
import { cliFieldManager, type KubeClient } from "../../kube/kube-client.ts";
import { loadKubeTarget } from "../../kube/kubeconfig-loader.ts";
import { OptionError, parseDuration } from "../options.ts";
import { parseArgsMessage } from "../parse-args-message.ts";
import { type CliKind, describeKinds, findKind } from "./cli-kind.ts";

export type FlagValue = string | boolean | undefined;
export type Flags = Readonly<Record<string, FlagValue>>;

interface FlagSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
}
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** Flags every task command takes. */
export const commonFlags = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  namespace: { type: "string", short: "n" },
  kind: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies FlagSpecs;

export interface Parsed {
  readonly flags: Flags;
  readonly positionals: ReadonlyArray<string>;
}

/** Parses `argv` against `specs` (plus the common flags); unknown flags are an `OptionError`. */
export const parseFlags = (argv: ReadonlyArray<string>, specs: FlagSpecs, usageHint: string): Parsed => {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...commonFlags, ...specs },
      strict: true,
      allowPositionals: true,
    });
    const flags: Record<string, FlagValue> = {};
    for (const [name, value] of Object.entries(values)) {
      if (typeof value === "string" || typeof value === "boolean") flags[name] = value;
    }
    return { flags, positionals };
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see ${usageHint}`);
  }
};

export const stringFlag = (flags: Flags, name: string): string | undefined => {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
};

export const booleanFlag = (flags: Flags, name: string): boolean => flags[name] === true;

/** The positional arguments, exactly `names.length` of them (`<etcd>`, `<task>` …). */
export const positionals = (
  parsed: Parsed,
  names: ReadonlyArray<string>,
  usageHint: string,
): ReadonlyArray<string> => {
  const got = parsed.positionals;
  if (got.length === names.length) return got;
  const expected = names.map((name) => `<${name}>`).join(" ");
  throw new OptionError(
    got.length < names.length
      ? `missing ${expected}; see ${usageHint}`
      : `unexpected argument${got.length - names.length > 1 ? "s" : ""} ${got
          .slice(names.length)
          .map((arg) => `"${arg}"`)
          .join(", ")}: expected ${expected === "" ? "no arguments" : `only ${expected}`}; see ${usageHint}`,
  );
};

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export interface Target {
  /** The controller's client (src/kube), writing as field manager `opstask-cli`. */
  readonly client: KubeClient;
  /** `-n`, else the kubeconfig context's namespace, else `default`. */
  readonly namespace: string;
  /** The task kind (`--kind`, default the first of the CLI's kinds). */
  readonly kind: CliKind;
}

/** The task kind `--kind` names among `kinds` (default: the first). */
export const resolveKind = (flags: Flags, kinds: ReadonlyArray<CliKind>): CliKind => {
  const named = stringFlag(flags, "kind");
  const found = named === undefined ? kinds[0] : findKind(kinds, named);
  if (found === undefined)
    throw new OptionError(
      `unknown value "${named ?? ""}" for --kind: expected one of ${describeKinds(kinds)}`,
    );
  return found;
};

/**
 * The cluster (`--kubeconfig`, else `$KUBECONFIG`, else in a pod its service account, else
 * `~/.kube/config`; `--context` picks a context other than the current one), the namespace and the
 * kind. Read by the controller's own loader: one client, so a kubeconfig works for both or neither.
 */
export const resolveTarget = async (
  flags: Flags,
  env: TaskEnv,
  kinds: ReadonlyArray<CliKind>,
): Promise<Target> => {
  const kind = resolveKind(flags, kinds);
  const flagged = stringFlag(flags, "namespace");
  if (flagged !== undefined && !dnsLabel.test(flagged))
    throw new OptionError(`invalid value "${flagged}" for -n/--namespace: expected a namespace name`);
  const fromFlag = stringFlag(flags, "kubeconfig");
  const fromEnv = env.KUBECONFIG === undefined || env.KUBECONFIG === "" ? undefined : env.KUBECONFIG;
  const context = stringFlag(flags, "context");
  // The loader reads $KUBECONFIG from the process; a path from `env` (tests) is passed on explicitly.
  const path = fromFlag ?? (fromEnv !== undefined && !fromEnv.includes(":") ? fromEnv : undefined);
  try {
    const target = await loadKubeTarget(path, { context, fieldManager: cliFieldManager });
    return { client: target.client, namespace: flagged ?? target.namespace ?? "default", kind };
  } catch (error) {
    throw new OptionError(error instanceof Error ? error.message : String(error));
  }
};

export type TaskEnv = Readonly<Record<string, string | undefined>>;

/** An integer number of seconds ≥ `minimum`, for `flag`; `what` says what it is for in the error. */
export const secondsFlag = (flags: Flags, flag: string, minimum: number, what = ""): number | undefined => {
  const raw = stringFlag(flags, flag);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < minimum || Number(raw) > 2_147_483_647)
    throw new OptionError(
      `invalid value "${raw}" for --${flag}: expected whole seconds ≥ ${minimum}${what === "" ? "" : ` ${what}`}`,
    );
  return Number(raw);
};

/** The default of `--wait-timeout`. */
export const defaultWaitTimeoutMs = 20 * 60_000;

/** `--wait-timeout`, else `$OPSTASK_WAIT_TIMEOUT`, else 20 minutes: a duration (`90s`, `20m`) or seconds. */
export const waitTimeoutMs = (flags: Flags, env: TaskEnv): number => {
  const fromFlag = stringFlag(flags, "wait-timeout");
  const fromEnv = env.OPSTASK_WAIT_TIMEOUT === "" ? undefined : env.OPSTASK_WAIT_TIMEOUT;
  const raw = fromFlag ?? fromEnv;
  if (raw === undefined) return defaultWaitTimeoutMs;
  const ms = /^\d+$/.test(raw) ? Number(raw) * 1000 : parseDuration(raw);
  if (ms === undefined || ms <= 0)
    throw new OptionError(
      `invalid value "${raw}" for ${fromFlag !== undefined ? "--wait-timeout" : "$OPSTASK_WAIT_TIMEOUT"}: expected a positive duration such as 90s or 20m (a bare number is seconds)`,
    );
  return ms;
};
