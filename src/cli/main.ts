#!/usr/bin/env node
/**
 * The `opstask` command. Subcommands:
 *   controller   run the EtcdOpsTask controller against a cluster
 *   dev          start a local control plane and run the controller on it (no cluster needed)
 *   machine      print the task lifecycle machine (json | mermaid | dot | svg)
 *   snapshot, maintain, get, describe, wait   the task CLI (src/cli/task; also `kubectl opstask`)
 */
import { controllerCommand } from "./controller-command.ts";
import { devCommand } from "./dev-command.ts";
import { machineCommand } from "./machine-command.ts";
import { OptionError } from "./options.ts";
import { taskCommands } from "./task/index.ts";

const usage = `Usage: opstask <command> [options]

Commands:
  controller   run the EtcdOpsTask controller against a cluster (opstask controller --help)
  dev          start a local kube-apiserver + etcd, install the CRDs, run the controller on it
  machine      print the task lifecycle machine: --format json | mermaid | dot | svg
  snapshot     create an on-demand snapshot task: snapshot <etcd> --type full|delta [--final] [--wait]
  maintain     create a maintenance task: maintain <etcd> [--compact [--physical]] [--defrag] [--wait]
  get          list tasks (-A: all namespaces, -w: watch)
  describe     explain why a task is where it is
  wait         follow a task until it ends (exit 0 on Succeeded, 1 on Failed/Rejected)
`;

const commands: Record<string, (argv: ReadonlyArray<string>) => Promise<number>> = {
  controller: controllerCommand,
  dev: devCommand,
  machine: machineCommand,
  ...taskCommands,
};

const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(usage);
    return name === undefined ? 2 : 0;
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
    throw error;
  }
};

process.exitCode = await main(process.argv.slice(2));
