/**
 * The task commands: create EtcdOpsTasks, follow them, list them and explain them. Part of `opstask`
 * and, through `bin/kubectl-opstask`, a kubectl plugin (`kubectl opstask snapshot main --type full`).
 *
 *   snapshot <etcd> --type full|delta   an on-demand snapshot
 *   maintain <etcd> --compact|--defrag  on-demand compaction and/or defragmentation
 *   get [-A] [-w]                       the tasks as a table
 *   describe <task>                     state, timeline, errors, and why
 *   wait <task>                         follow a task until it ends
 */
import * as Effect from "effect/Effect";
import { OptionError } from "../options.ts";
import {
  booleanFlag,
  type Parsed,
  parseFlags,
  positionals,
  resolveTarget,
  stringFlag,
  waitTimeoutMs,
} from "./args.ts";
import { connect, getTask } from "./cluster.ts";
import { runTaskCommand, type TaskCommand, type TaskCommandSpec } from "./command.ts";
import {
  createAndMaybeWait,
  maintainFlags,
  maintenanceManifest,
  snapshotFlags,
  snapshotManifest,
  waitSettings,
} from "./create.ts";
import { describeTask } from "./describe.ts";
import { processIo, type TaskIo } from "./io.ts";
import { getTasks } from "./table.ts";
import { WaitExit, waitForTask } from "./wait.ts";

const common = `Common options:
  --kubeconfig FILE     cluster to use (else $KUBECONFIG, else ~/.kube/config)
  -n, --namespace NS    namespace (else the kubeconfig context's, else default)
`;

const waitHelp = `  --wait                follow the task until it ends: exit 0 Succeeded, 1 Failed/Rejected, 3 timed out
  --wait-timeout DUR    give up waiting after DUR (90s, 20m; default 20m; env OPSTASK_WAIT_TIMEOUT)
`;

const createHelp = `  --name NAME           the task's name (default: generated, <etcd>-<kind>-xxxxx)
  --ttl SECONDS         keep the finished task this long (default 3600)
${waitHelp}`;

const hint = (name: string) => `'{program} ${name} --help'`;

/** `snapshot` and `maintain`: parse `<etcd>` and the flags, build the manifest, create it, maybe wait. */
const createCommand =
  (
    name: string,
    flags: Parameters<typeof parseFlags>[1],
    manifestOf: (etcd: string, values: Parsed["flags"]) => object,
  ): TaskCommandSpec["prepare"] =>
  (argv, io) => {
    const usageHint = hint(name).replace("{program}", io.program);
    const parsed = parseFlags(argv, flags, usageHint);
    const [etcd = ""] = positionals(parsed, ["etcd"], usageHint);
    const manifest = manifestOf(etcd, parsed.flags);
    const wait = waitSettings(parsed.flags, io);
    const target = resolveTarget(parsed.flags, io.env);
    return createAndMaybeWait({
      cluster: connect(target.kubeConfig),
      namespace: target.namespace,
      manifest,
      waitTimeoutMs: wait,
      io,
    });
  };

const snapshot: TaskCommandSpec = {
  name: "snapshot",
  usage: `Usage: {program} snapshot <etcd> --type full|delta [--final] [options]

Creates an EtcdOpsTask that takes an on-demand snapshot of <etcd> and prints its name.

  --type full|delta     the snapshot to take (required)
  --final               a final full snapshot (only with --type full)
  --timeout SECONDS     bound on the snapshot call (full: ≥ 120, default 900; delta: ≥ 10, default 60)
${createHelp}
${common}`,
  interruptedExit: WaitExit.interrupted,
  prepare: createCommand("snapshot", snapshotFlags, snapshotManifest),
};

const maintain: TaskCommandSpec = {
  name: "maintain",
  usage: `Usage: {program} maintain <etcd> [--compact [--physical]] [--defrag] [options]

Creates an EtcdOpsTask that compacts and/or defragments <etcd> and prints its name. With both,
compaction runs first, so that defragmentation reclaims the space it freed.

  --compact             compact the key space up to the current revision
  --physical            wait until the compaction is applied to the backend (only with --compact)
  --defrag              defragment every member's backend database, one member at a time
  --timeout SECONDS     bound on each call to etcd (≥ 10, default 300)
${createHelp}
${common}`,
  interruptedExit: WaitExit.interrupted,
  prepare: createCommand("maintain", maintainFlags, maintenanceManifest),
};

const get: TaskCommandSpec = {
  name: "get",
  usage: `Usage: {program} get [-n NS | -A] [-w]

Lists EtcdOpsTasks: NAME, STATE, ETCD, PHASE (lastOperation type/state), AGE, LAST ERROR (code).

  -A, --all-namespaces  tasks of every namespace (adds a NAMESPACE column)
  -w, --watch           after the table, print a row whenever a task changes (Ctrl-C ends)
${common}`,
  interruptedExit: 0,
  prepare: (argv, io) => {
    const usageHint = hint("get").replace("{program}", io.program);
    const parsed = parseFlags(
      argv,
      { "all-namespaces": { type: "boolean", short: "A" }, watch: { type: "boolean", short: "w" } },
      usageHint,
    );
    positionals(parsed, [], usageHint);
    const all = booleanFlag(parsed.flags, "all-namespaces");
    if (all && stringFlag(parsed.flags, "namespace") !== undefined)
      throw new OptionError("-A/--all-namespaces and -n/--namespace exclude each other: use one");
    const target = resolveTarget(parsed.flags, io.env);
    return getTasks({
      cluster: connect(target.kubeConfig),
      namespace: all ? undefined : target.namespace,
      watch: booleanFlag(parsed.flags, "watch"),
      stdout: io.stdout,
      stderr: io.stderr,
    });
  },
};

const describe: TaskCommandSpec = {
  name: "describe",
  usage: `Usage: {program} describe <task> [-n NS]

Explains an EtcdOpsTask: its spec, state and phase, a timeline rebuilt from its status and its
Kubernetes Events, its last errors (newest last), and a line on why it is where it is.

${common}`,
  interruptedExit: WaitExit.interrupted,
  prepare: (argv, io) => {
    const usageHint = hint("describe").replace("{program}", io.program);
    const parsed = parseFlags(argv, {}, usageHint);
    const [name = ""] = positionals(parsed, ["task"], usageHint);
    const target = resolveTarget(parsed.flags, io.env);
    return describeTask({
      cluster: connect(target.kubeConfig),
      namespace: target.namespace,
      name,
      stdout: io.stdout,
    });
  },
};

const wait: TaskCommandSpec = {
  name: "wait",
  usage: `Usage: {program} wait <task> [-n NS] [--wait-timeout DUR]

Follows an existing EtcdOpsTask until it ends: exit 0 Succeeded, 1 Failed/Rejected (the last error on
stderr), 3 when the wait times out (default 20m; env OPSTASK_WAIT_TIMEOUT).

${common}`,
  interruptedExit: WaitExit.interrupted,
  prepare: (argv, io) => {
    const usageHint = hint("wait").replace("{program}", io.program);
    const parsed = parseFlags(argv, { "wait-timeout": { type: "string" } }, usageHint);
    const [name = ""] = positionals(parsed, ["task"], usageHint);
    const timeoutMs = waitTimeoutMs(parsed.flags, io.env);
    const target = resolveTarget(parsed.flags, io.env);
    const cluster = connect(target.kubeConfig);
    return getTask(cluster, target.namespace, name).pipe(
      Effect.flatMap((task) => waitForTask({ cluster, task, timeoutMs, io })),
    );
  },
};

const specs: ReadonlyArray<TaskCommandSpec> = [snapshot, maintain, get, describe, wait];

/** The task commands writing to `io` (tests capture it); `taskCommands` uses the process's streams. */
export const makeTaskCommands = (makeIo: () => TaskIo): Record<string, TaskCommand> =>
  Object.fromEntries(specs.map((spec) => [spec.name, runTaskCommand(spec, makeIo)]));

export const taskCommands: Record<string, (argv: ReadonlyArray<string>) => Promise<number>> =
  makeTaskCommands(processIo);
