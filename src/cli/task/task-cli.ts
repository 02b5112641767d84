/**
 * `taskCli`: kubectl-style `get`, `describe`, `wait` and `delete` for an operator's own task kinds,
 * the commands `opstask` has for EtcdOpsTask. An operator's binary hands them its argv:
 *
 *   import { cliKindOf, taskCli } from "opstask/cli";
 *   process.exitCode = await taskCli([cliKindOf(greetingKind)], { program: "greeter" })(process.argv.slice(2));
 *
 * `greeter get`, `greeter describe hi`, `greeter wait hi`, `greeter delete hi`
 * then read the tasks through the kind's own decoder, with its words and columns; usage texts and
 * errors name the program and the kinds, never EtcdOpsTask.
 */
import { basename } from "node:path";
import type { CliKind } from "./cli-kind.ts";
import type { TaskCommand } from "./command.ts";
import { makeTaskCommands } from "./index.ts";
import { processIo, type TaskIo } from "./io.ts";

/** The commands that work for any kind (snapshot and maintain create EtcdOpsTasks). */
export const kindCommands = ["get", "describe", "wait", "delete"] as const;

export interface TaskCliOptions {
  /**
   * How users call the CLI, in usage texts and hints (`greeter`, `kubectl greet`). Default: the
   * file name of the script that runs (`process.argv[1]`).
   */
  readonly program?: string;
  /** Where the commands read and write (default: the process's streams); tests capture the output. */
  readonly io?: () => TaskIo;
}

const scriptName = (): string | undefined => {
  const script = process.argv[1];
  return script === undefined || script === "" ? undefined : basename(script);
};

/**
 * A command line over `kinds` (the first is what `--kind` defaults to): `argv[0]` names the command,
 * the rest are its arguments. Resolves to the exit code (2 for an unknown command, with the usage).
 */
export const taskCli = (
  kinds: ReadonlyArray<CliKind>,
  options: TaskCliOptions = {},
): ((argv: ReadonlyArray<string>) => Promise<number>) => {
  const program = options.program ?? scriptName() ?? kinds[0]?.resource.plural ?? "tasks";
  const makeIo = (): TaskIo => ({ ...(options.io ?? processIo)(), program });
  const all = makeTaskCommands(makeIo, kinds);
  const commands = new Map<string, TaskCommand>();
  for (const name of kindCommands) {
    const command = all[name];
    if (command !== undefined) commands.set(name, command);
  }
  return async (argv) => {
    const [name, ...rest] = argv;
    const command = name === undefined ? undefined : commands.get(name);
    if (command !== undefined) return command(rest);
    const io = makeIo();
    io.stderr.write(
      `${name === undefined ? "a command is needed" : `unknown command ${JSON.stringify(name)}`}: ${io.program} ${kindCommands.join("|")} [arguments] (--help for each)\n`,
    );
    io.release?.();
    return 2;
  };
};
