#!/usr/bin/env node
/**
 * The `opstask` command. Subcommands:
 *   controller   run the EtcdOpsTask controller against a cluster
 *   dev          start a local control plane and run the controller on it (no cluster needed)
 *   machine      print the task lifecycle machine (json | mermaid | dot | svg)
 *   crd          print the CRD a module exports (taskCrd's result) as YAML
 *   deploy-artifacts  write a kind's RBAC, ServiceAccount, Deployment, kustomization and Dockerfile
 *   bundle       bundle a controller's program (rolldown) for an image without node_modules
 *   init         write a new operator project for a task kind of one's own (src/cli/init)
 *   snapshot, maintain, recover-quorum, get, describe, wait, delete, cancel, history   the task CLI (src/cli/task; also `kubectl opstask`)
 *   completion   a bash or zsh completion script
 *   schedule     TaskSchedules: create, get, describe, suspend, resume, trigger (src/cli/schedule)
 */
import { readFile } from "node:fs/promises";
import { missingPackage } from "../optional-package.ts";
import { OptionError } from "./options.ts";
import { taskCommandNames } from "./task/names.ts";

const usage = `Usage: opstask <command> [options]

Commands:
  controller   run the EtcdOpsTask controller against a cluster (opstask controller --help)
  dev          start a local kube-apiserver + etcd, install the CRDs, run the controller on it
  machine      print the task lifecycle machine: --format json | mermaid | dot | svg
  snapshot     create an on-demand snapshot task: snapshot <etcd> --type full|delta [--final] [--wait]
  maintain     create a maintenance task: maintain <etcd> [--compact [--physical]] [--defrag] [--wait]
  recover-quorum  recover an etcd cluster from a permanent quorum loss (asks first; --yes to skip)
  get          list tasks: get [NAME…] [-o json|yaml|name|wide] [-l SELECTOR] [-A] [-w]
  describe     explain why a task is where it is
  wait         follow a task until it ends (exit 0 on Succeeded, 1 on Failed/Rejected)
  crd          print a task kind's CRD: crd --module <file> --export <name> (a taskCrd(...) result)
  deploy-artifacts  write a task kind's RBAC, Deployment and Dockerfile: --module <file> --export <kind>
  bundle       bundle a controller's program for its image: bundle main.ts [dist/bundle]
  init         write a new operator project for your own task kind: init <dir> [--kind Name]
  version      print the version (also --version)
  delete       delete tasks: delete NAME… | -l SELECTOR
  cancel       cancel running or queued tasks: cancel NAME…
  history      last outcomes per task type of a target (an Etcd), kept after the tasks' TTL
  schedule     cron schedules of tasks: schedule create|get|describe|suspend|resume|trigger
  completion   print a shell completion script: completion bash|zsh

Every command takes --help. Task commands take --kubeconfig, --context and -n/--namespace.
`;

type Command = (argv: ReadonlyArray<string>) => Promise<number>;

/**
 * Each command's module is loaded only when it runs: `controller` must not carry the task CLI's and
 * the dev cluster's dependencies (client-node above all: docs/design-notes.md §15).
 */
const task =
  (name: string): Command =>
  async (argv) => {
    const { taskCommands } = await import("./task/index.ts");
    const command = taskCommands[name];
    if (command === undefined) throw new Error(`opstask: no task command "${name}"`);
    return command(argv);
  };
const commands: Record<string, Command> = {
  controller: async (argv) => {
    // Before the controller's code loads: V8's heap settings apply from here on (v8-flags.ts).
    const v8Error = (await import("./v8-flags.ts")).applyV8Flags(process.env);
    if (v8Error !== undefined) throw new OptionError(v8Error);
    return (await import("./controller-command.ts")).controllerCommand(argv);
  },
  dev: async (argv) => (await import("./dev-command.ts")).devCommand(argv),
  schedule: async (argv) => (await import("./schedule/opstask-schedule.ts")).opstaskScheduleCommand(argv),
  machine: async (argv) => (await import("./machine-command.ts")).machineCommand(argv),
  completion: async (argv) => (await import("./completion-command.ts")).completionCommand(argv),
  crd: async (argv) => (await import("./crd-command.ts")).crdCommand(argv),
  "deploy-artifacts": async (argv) =>
    (await import("./deploy-artifacts-command.ts")).deployArtifactsCommand(argv),
  bundle: async (argv) => (await import("./bundle-command.ts")).bundleCommand(argv),
  init: async (argv) => (await import("./init-command.ts")).initCommand(argv),
  ...Object.fromEntries(taskCommandNames.map((name) => [name, task(name)])),
};

/**
 * package.json's version. The file sits two directories above this module in every layout it runs
 * from: src/cli/main.ts in a checkout, dist/cli/main.js in the npm package, and
 * /app/dist/bundle/main.js in the image (which copies package.json to /app for "type": "module").
 */
const packageVersion = async (): Promise<string> => {
  const manifest: unknown = JSON.parse(
    await readFile(new URL("../../package.json", import.meta.url), "utf8"),
  );
  const version =
    typeof manifest === "object" && manifest !== null ? Reflect.get(manifest, "version") : undefined;
  return typeof version === "string" ? version : "unknown";
};

const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "version") {
    process.stdout.write(`${await packageVersion()}\n`);
    return 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`opstask: unknown command "${name}"\n\n${usage}`);
    return 2;
  }
  try {
    return await command(rest);
  } catch (error) {
    if (error instanceof OptionError) {
      process.stderr.write(`opstask ${name}: ${error.message}\n`);
      return 2;
    }
    const missing = missingPackage(error);
    if (missing !== undefined) {
      process.stderr.write(`opstask ${name} needs the optional package ${missing}: npm install ${missing}\n`);
      return 1;
    }
    throw error;
  }
};

process.exitCode = await main(process.argv.slice(2));
