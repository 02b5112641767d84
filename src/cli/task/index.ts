/**
 * The task commands (the README's CLI table): create EtcdOpsTasks, follow, list, explain, cancel and delete
 * them; part of `opstask` and, through `bin/kubectl-opstask`, a kubectl plugin. get, describe, wait,
 * create, delete and history work for any task kind (`makeTaskCommands` takes the kinds, the first
 * the default of `--kind`); snapshot, maintain and recover-quorum create EtcdOpsTasks
 * (`makeOpstaskCommands`).
 */
import * as Effect from "effect/Effect";
import { OptionError } from "../options.ts";
import {
  booleanFlag,
  type FlagSpecs,
  type Parsed,
  parseFlags,
  positionals,
  resolveTarget,
  stringFlag,
  waitTimeoutMs,
} from "./args.ts";
import { cancelTasks } from "./cancel.ts";
import { type CliKind, describeGroupHeaders, describeKinds } from "./cli-kind.ts";
import { connect, getTask } from "./cluster.ts";
import { runTaskCommand, type TaskCommand, type TaskCommandSpec } from "./command.ts";
import {
  createAndMaybeWait,
  maintainFlags,
  maintenanceManifest,
  recoverQuorumFlags,
  recoverQuorumManifest,
  snapshotFlags,
  snapshotManifest,
  waitSettings,
} from "./create.ts";
import { deleteTasks } from "./delete.ts";
import { describeTask } from "./describe.ts";
import { etcdCliKind } from "./etcd-kind.ts";
import { historyCommandSpec } from "./history.ts";
import { processIo, type TaskIo } from "./io.ts";
import { readManifestFile } from "./manifest-file.ts";
import { parseOutputFormat } from "./output.ts";
import { getTasks } from "./table.ts";
import { WaitExit, waitForTask } from "./wait.ts";

const common = (kinds: ReadonlyArray<CliKind>) => `Common options:
  --kubeconfig FILE     cluster to use (else $KUBECONFIG, else in a pod its service account, else ~/.kube/config)
  --context NAME        the kubeconfig context to use (default: its current-context)
  -n, --namespace NS    namespace (else the context's namespace, else default)
  --kind KIND           task kind: ${describeKinds(kinds)} (default ${kinds[0]?.resource.plural ?? ""})
  -h, --help            this text
`;

const waitHelp = `  --wait                follow the task until it ends: exit 0 Succeeded, 1 Failed/Rejected, 3 timed out
  --wait-timeout DUR    give up waiting after DUR (90s, 20m; default 20m; env OPSTASK_WAIT_TIMEOUT)
`;

const createHelp = `  --name NAME           the task's name (default: generated, <etcd>-<kind>-xxxxx)
  --ttl SECONDS         keep the finished task this long (default 3600)
${waitHelp}`;

const exitHelp = "Exit codes: 0 done, 1 an API error (one line on stderr), 2 a bad argument or option.\n";

const hint = (name: string, io: TaskIo) => `'${io.program} ${name} --help'`;

const selectorFlag = { selector: { type: "string", short: "l" } } as const satisfies FlagSpecs;

/** `-l`'s value; the API server checks its syntax (a bad one is a 400, exit 2). */
const selectorOf = (flags: Parsed["flags"]): string | undefined => {
  const selector = stringFlag(flags, "selector");
  if (selector !== undefined && selector.trim() === "")
    throw new OptionError("empty value for -l/--selector: expected a label selector such as app=x,tier!=db");
  return selector;
};

/** `snapshot` and `maintain`: parse `<etcd>` and the flags, build the manifest, create it, maybe wait. */
const createCommand =
  (
    name: string,
    flags: FlagSpecs,
    manifestOf: (etcd: string, values: Parsed["flags"]) => object,
  ): TaskCommandSpec["prepare"] =>
  async (argv, io) => {
    const usageHint = hint(name, io);
    const parsed = parseFlags(argv, flags, usageHint);
    if (stringFlag(parsed.flags, "kind") !== undefined)
      throw new OptionError(`--kind does not apply to ${name}: it creates ${etcdCliKind.resource.kind}s`);
    const [etcd = ""] = positionals(parsed, ["etcd"], usageHint);
    const manifest = manifestOf(etcd, parsed.flags);
    const wait = waitSettings(parsed.flags, io);
    const target = await resolveTarget(parsed.flags, io.env, [etcdCliKind]);
    return {
      kind: target.kind,
      run: createAndMaybeWait({
        cluster: connect(target.client, target.kind),
        namespace: target.namespace,
        manifest,
        waitTimeoutMs: wait,
        io,
      }),
    };
  };

/** `snapshot` and `maintain`: they create EtcdOpsTasks (`kinds` only for the help's `--kind` line). */
const etcdSpecs = (kinds: ReadonlyArray<CliKind>): ReadonlyArray<TaskCommandSpec> => {
  const commonHelp = common(kinds);
  const snapshot: TaskCommandSpec = {
    name: "snapshot",
    summary: "create an on-demand snapshot task: snapshot <etcd> --type full|delta [--final] [--wait]",
    usage: `Usage: {program} snapshot <etcd> --type full|delta [--final] [options]

Creates an EtcdOpsTask that takes an on-demand snapshot of <etcd> and prints its name.

  --type full|delta     the snapshot to take (required)
  --final               a final full snapshot (only with --type full)
  --timeout SECONDS     bound on the snapshot call (full: ≥ 120, default 900; delta: ≥ 10, default 60)
${createHelp}
${commonHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: createCommand("snapshot", snapshotFlags, snapshotManifest),
  };

  const maintain: TaskCommandSpec = {
    name: "maintain",
    summary: "create a maintenance task: maintain <etcd> [--compact [--physical]] [--defrag] [--wait]",
    usage: `Usage: {program} maintain <etcd> [--compact [--physical]] [--defrag] [options]

Creates an EtcdOpsTask that compacts and/or defragments <etcd> and prints its name. With both,
compaction runs first, so that defragmentation reclaims the space it freed.

  --compact             compact the key space up to the current revision
  --physical            wait until the compaction is applied to the backend (only with --compact)
  --defrag              defragment every member's backend database, one member at a time
  --timeout SECONDS     bound on each call to etcd (≥ 10, default 300)
${createHelp}
${commonHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: createCommand("maintain", maintainFlags, maintenanceManifest),
  };
  const recoverQuorum: TaskCommandSpec = {
    name: "recover-quorum",
    summary: "recover an etcd cluster from a permanent quorum loss: recover-quorum <etcd> [--yes] [--wait]",
    usage: `Usage: {program} recover-quorum <etcd> [--yes] [options]

Creates a recoverFromQuorumLoss EtcdOpsTask for <etcd> and prints its name. DESTRUCTIVE: the task
scales the StatefulSet to 0, deletes every member's volume (PVC) and Lease, brings member 0 back from
the latest backup and lets etcd-druid scale out again. The controller admits it only when the Etcd
reports Ready=False with reason QuorumLost, and needs deploy/quorum-recovery/'s RBAC.

You are asked to type the Etcd's name first; the task then carries druid's confirmation annotation
(druid.gardener.cloud/confirm-recovery: "true") and starts at once.

  -y, --yes                   do not ask (scripts); without a terminal, --yes is required
  --scale-down-timeout DUR    wait for 0 replicas at most DUR (default 60s)
  --pod-ready-timeout DUR     wait for member 0 to be ready at most DUR (default 180s)
  --etcd-ready-timeout DUR    wait for every member to be ready at most DUR (default 300s)
  --allow-data-loss           run even without a backup store or a Ready backup (the cluster may start empty)
${createHelp}
${commonHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const prepared = await createCommand(
        "recover-quorum",
        recoverQuorumFlags,
        recoverQuorumManifest,
      )(argv, io);
      const parsed = parseFlags(argv, recoverQuorumFlags, hint("recover-quorum", io));
      if (booleanFlag(parsed.flags, "yes")) return prepared;
      const [etcd = ""] = positionals(parsed, ["etcd"], hint("recover-quorum", io));
      const answer = await io.ask?.(
        `This deletes every member's volume of etcd ${etcd} and restores member 0 from the latest backup.\nType the Etcd's name to confirm: `,
      );
      if (answer === undefined)
        throw new OptionError(
          "recover-quorum is destructive and stdin is not a terminal: pass --yes to confirm",
        );
      if (answer.trim() === etcd) return prepared;
      return {
        kind: prepared.kind,
        run: Effect.sync(() => {
          io.stderr.write(`not confirmed ("${answer.trim()}" is not "${etcd}"): no task created\n`);
          return 1;
        }),
      };
    },
  };
  return [snapshot, maintain, recoverQuorum];
};

/** The commands that work for any kind. */
const kindSpecs = (kinds: ReadonlyArray<CliKind>): ReadonlyArray<TaskCommandSpec> => {
  const commonHelp = common(kinds);
  const get: TaskCommandSpec = {
    name: "get",
    summary: "list tasks: get [NAME…] [-o json|yaml|name|wide] [-l SELECTOR] [-A] [-w]",
    usage: `Usage: {program} get [NAME…] [-o json|yaml|name|wide] [-l SELECTOR] [-n NS | -A] [-w]

Lists tasks: NAME, STATE, the admission group (${describeGroupHeaders(kinds)}), PHASE (lastOperation type/state), AGE, LAST
ERROR (code); with NAMEs only those (exit 1 when one does not exist).

  -o, --output FORMAT   json or yaml (the objects; several as a List), name (kind.group/name), or
                        wide (adds TYPE, the config member, and DESCRIPTION, the last operation's)
  --show-managed-fields with -o json|yaml: keep metadata.managedFields (who wrote which field)
  -l, --selector SEL    only tasks whose labels match (app=x, tier!=db, 'env in (a,b)')
  -A, --all-namespaces  tasks of every namespace (adds a NAMESPACE column)
  -w, --watch           after the first answer, print a row (or document) whenever a task changes
                        (Ctrl-C ends)
${commonHelp}
${exitHelp}`,
    interruptedExit: 0,
    prepare: async (argv, io) => {
      const usageHint = hint("get", io);
      const parsed = parseFlags(
        argv,
        {
          "all-namespaces": { type: "boolean", short: "A" },
          watch: { type: "boolean", short: "w" },
          output: { type: "string", short: "o" },
          "show-managed-fields": { type: "boolean" },
          ...selectorFlag,
        },
        usageHint,
      );
      const names = parsed.positionals;
      const all = booleanFlag(parsed.flags, "all-namespaces");
      if (all && stringFlag(parsed.flags, "namespace") !== undefined)
        throw new OptionError("-A/--all-namespaces and -n/--namespace exclude each other: use one");
      if (all && names.length > 0)
        throw new OptionError(
          "a task cannot be fetched by name across all namespaces: drop -A, or use -n NS",
        );
      const labelSelector = selectorOf(parsed.flags);
      if (labelSelector !== undefined && names.length > 0)
        throw new OptionError("NAMEs and -l/--selector exclude each other: use one");
      const output = parseOutputFormat(stringFlag(parsed.flags, "output"));
      const target = await resolveTarget(parsed.flags, io.env, kinds);
      return {
        kind: target.kind,
        run: getTasks({
          cluster: connect(target.client, target.kind),
          namespace: all ? undefined : target.namespace,
          names,
          labelSelector,
          output,
          showManagedFields: booleanFlag(parsed.flags, "show-managed-fields"),
          watch: booleanFlag(parsed.flags, "watch"),
          stdout: io.stdout,
          stderr: io.stderr,
        }),
      };
    },
  };

  const describe: TaskCommandSpec = {
    name: "describe",
    summary: "explain a task: its state, timeline, errors and why it is where it is",
    usage: `Usage: {program} describe <task> [-n NS]

Explains a task: its spec, state and phase, a timeline rebuilt from its status and its Kubernetes
Events, its last errors (newest last), and a line on why it is where it is.

${commonHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const usageHint = hint("describe", io);
      const parsed = parseFlags(argv, {}, usageHint);
      const [name = ""] = positionals(parsed, ["task"], usageHint);
      const target = await resolveTarget(parsed.flags, io.env, kinds);
      return {
        kind: target.kind,
        run: describeTask({
          cluster: connect(target.client, target.kind),
          namespace: target.namespace,
          name,
          stdout: io.stdout,
        }),
      };
    },
  };

  const wait: TaskCommandSpec = {
    name: "wait",
    summary: "follow a task until it ends (exit 0 on Succeeded, 1 on Failed/Rejected)",
    usage: `Usage: {program} wait <task> [-n NS] [--wait-timeout DUR]

Follows an existing task until it ends: exit 0 Succeeded, 1 Failed/Rejected (the last error on
stderr), 3 when the wait times out (default 20m; env OPSTASK_WAIT_TIMEOUT).

${commonHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const usageHint = hint("wait", io);
      const parsed = parseFlags(argv, { "wait-timeout": { type: "string" } }, usageHint);
      const [name = ""] = positionals(parsed, ["task"], usageHint);
      const timeoutMs = waitTimeoutMs(parsed.flags, io.env);
      const target = await resolveTarget(parsed.flags, io.env, kinds);
      const cluster = connect(target.client, target.kind);
      return {
        kind: target.kind,
        run: getTask(cluster, target.namespace, name).pipe(
          Effect.flatMap((task) => waitForTask({ cluster, task, timeoutMs, io })),
        ),
      };
    },
  };

  const create: TaskCommandSpec = {
    name: "create",
    summary: "create a task from a YAML or JSON file, checked first: create -f FILE [--wait]",
    usage: `Usage: {program} create -f FILE [-n NS] [--wait [--wait-timeout DUR]]

Creates the task FILE holds (YAML or JSON, one object) and prints its name. The file is checked first
with the kind's own schema, as the controller will read the task: a field it would reject is named
here (exit 2) and nothing is sent. Its apiVersion and kind pick the kind (left out: --kind's); its
metadata.namespace is used unless -n names one.

  -f, --filename FILE   the task manifest
${waitHelp}
${commonHelp}
${exitHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const usageHint = hint("create", io);
      const parsed = parseFlags(
        argv,
        {
          filename: { type: "string", short: "f" },
          wait: { type: "boolean" },
          "wait-timeout": { type: "string" },
        },
        usageHint,
      );
      positionals(parsed, [], usageHint);
      const file = stringFlag(parsed.flags, "filename");
      if (file === undefined)
        throw new OptionError(
          `missing -f FILE: the task manifest to create (YAML or JSON); see ${usageHint}`,
        );
      const wait = waitSettings(parsed.flags, io);
      const manifest = await readManifestFile(file, kinds, parsed.flags);
      // The file's kind, and its namespace unless -n names one (readManifestFile refused a clash).
      const namespace = stringFlag(parsed.flags, "namespace") ?? manifest.namespace;
      const target = await resolveTarget({ ...parsed.flags, kind: undefined, namespace }, io.env, [
        manifest.kind,
      ]);
      return {
        kind: target.kind,
        run: createAndMaybeWait({
          cluster: connect(target.client, target.kind),
          namespace: target.namespace,
          manifest: manifest.body,
          waitTimeoutMs: wait,
          io,
        }),
      };
    },
  };

  const remove: TaskCommandSpec = {
    name: "delete",
    summary: "delete tasks: delete NAME… | -l SELECTOR",
    usage: `Usage: {program} delete NAME… | -l SELECTOR [-n NS]

Deletes tasks. The controller runs each task's cleanup, then releases it; a handler call in flight
finishes first. A missing task is reported and the others are still deleted.

  -l, --selector SEL    delete every task of the namespace whose labels match
  --wait                return once the tasks are gone (cleanup done, finalizers released); exit 3
                        when --wait-timeout runs out first
  --wait-timeout DUR    give up waiting after DUR (90s, 20m; default 20m; env OPSTASK_WAIT_TIMEOUT)

${commonHelp}
${exitHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const usageHint = hint("delete", io);
      const parsed = parseFlags(
        argv,
        { ...selectorFlag, wait: { type: "boolean" }, "wait-timeout": { type: "string" } },
        usageHint,
      );
      const labelSelector = selectorOf(parsed.flags);
      const wait = waitSettings(parsed.flags, io);
      if (parsed.positionals.length === 0 && labelSelector === undefined)
        throw new OptionError(`missing NAME: expected task names or -l SELECTOR; see ${usageHint}`);
      if (parsed.positionals.length > 0 && labelSelector !== undefined)
        throw new OptionError("NAMEs and -l/--selector exclude each other: use one");
      const target = await resolveTarget(parsed.flags, io.env, kinds);
      return {
        kind: target.kind,
        run: deleteTasks({
          cluster: connect(target.client, target.kind),
          namespace: target.namespace,
          names: parsed.positionals,
          labelSelector,
          waitTimeoutMs: wait,
          stdout: io.stdout,
          stderr: io.stderr,
        }),
      };
    },
  };

  const cancel: TaskCommandSpec = {
    name: "cancel",
    summary: "cancel running or queued tasks: cancel NAME…",
    usage: `Usage: {program} cancel NAME… [-n NS]

Asks the controller to stop each task: a handler call in flight is aborted, no new step starts, a
steps task has its finished steps undone, and the task ends Failed ERR_CANCELLED naming who asked (as
the API server names you) and after which step. The task is kept until its TTL. A cancel is never
taken back; a task that has finished keeps its outcome.

${commonHelp}
${exitHelp}`,
    interruptedExit: WaitExit.interrupted,
    prepare: async (argv, io) => {
      const usageHint = hint("cancel", io);
      const parsed = parseFlags(argv, {}, usageHint);
      if (parsed.positionals.length === 0)
        throw new OptionError(`missing NAME: expected task names; see ${usageHint}`);
      const target = await resolveTarget(parsed.flags, io.env, kinds);
      return {
        kind: target.kind,
        run: cancelTasks({
          cluster: connect(target.client, target.kind),
          namespace: target.namespace,
          names: parsed.positionals,
          stdout: io.stdout,
          stderr: io.stderr,
        }),
      };
    },
  };

  return [get, describe, wait, create, remove, cancel, historyCommandSpec(kinds)];
};

/** At least one kind: the first is what `--kind` defaults to. */
export type CliKinds = readonly [CliKind, ...ReadonlyArray<CliKind>];

/** A command by name, with its one line for the CLI's help. */
export interface NamedCommand {
  readonly summary: string;
  readonly run: TaskCommand;
}

const commandsOf = (
  specs: ReadonlyArray<TaskCommandSpec>,
  makeIo: () => TaskIo,
): Record<string, NamedCommand> =>
  Object.fromEntries(
    specs.map((spec) => [spec.name, { summary: spec.summary, run: runTaskCommand(spec, makeIo) }]),
  );

/** get, describe, wait, create, delete and history for `kinds`, each with its help line (what `taskCli` lists). */
export const describedTaskCommands = (makeIo: () => TaskIo, kinds: CliKinds): Record<string, NamedCommand> =>
  commandsOf(kindSpecs(kinds), makeIo);

/**
 * get, describe, wait, create, delete and history for `kinds`, writing to `makeIo()`'s streams (tests capture
 * them); `taskCli` builds a whole command line over them.
 */
export const makeTaskCommands = (makeIo: () => TaskIo, kinds: CliKinds): Record<string, TaskCommand> =>
  Object.fromEntries(
    Object.entries(describedTaskCommands(makeIo, kinds)).map(([name, command]) => [name, command.run]),
  );

/**
 * `opstask`'s own (src/cli/task/names.ts): snapshot and maintain, which create EtcdOpsTasks from
 * flags, and get, describe, wait and delete for EtcdOpsTask.
 */
export const makeOpstaskCommands = (makeIo: () => TaskIo): Record<string, TaskCommand> => {
  const kinds: CliKinds = [etcdCliKind];
  const { create: _fromFile, ...generic } = makeTaskCommands(makeIo, kinds);
  return {
    ...Object.fromEntries(etcdSpecs(kinds).map((spec) => [spec.name, runTaskCommand(spec, makeIo)])),
    ...generic,
  };
};

export const taskCommands: Record<string, (argv: ReadonlyArray<string>) => Promise<number>> =
  makeOpstaskCommands(processIo);
