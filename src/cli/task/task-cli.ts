/**
 * `taskCli`: kubectl-style `get`, `describe`, `wait`, `create` and `delete` for an operator's own task
 * kinds, plus the operator's own commands, through each kind's decoder and in its words; usage texts and
 * errors name the program and the kinds, never EtcdOpsTask.
 *
 *   const cli = taskCli([cliKindOf(greetingKind)], { program: "greeter" });
 *   process.exitCode = await cli(process.argv.slice(2));
 */
import { basename } from "node:path";
import { describeKinds } from "./cli-kind.ts";
import { type CliKinds, describedTaskCommands, type NamedCommand } from "./index.ts";
import { processIo, type TaskIo } from "./io.ts";

/** The commands that work for any kind (snapshot and maintain create EtcdOpsTasks). */
export const kindCommands = ["get", "describe", "wait", "create", "delete", "cancel", "history"] as const;

/** An operator's own command, beside the task commands. */
export interface CliCommand {
  /** One line for the CLI's list of commands (`{program} --help`). */
  readonly summary: string;
  /**
   * Runs with the arguments after the command's name (its own `--help` included) and `io`, whose
   * `program` is how users call the CLI; resolves to the exit code.
   */
  readonly run: (argv: ReadonlyArray<string>, io: TaskIo) => Promise<number> | number;
}

export interface TaskCliOptions {
  /**
   * How users call the CLI, in usage texts and hints (`greeter`, `kubectl greet`). Default: the
   * file name of the script that runs (`process.argv[1]`).
   */
  readonly program?: string;
  /** Where the commands read and write (default: the process's streams); tests capture the output. */
  readonly io?: () => TaskIo;
  /** The operator's own commands, by name; one named as a task command replaces it. */
  readonly commands?: Readonly<Record<string, CliCommand>>;
}

const scriptName = (): string | undefined => {
  const script = process.argv[1];
  return script === undefined || script === "" ? undefined : basename(script);
};

/** The list of commands: `{program} --help`, and with an unknown or missing command. */
const usageOf = (program: string, kinds: CliKinds, commands: ReadonlyMap<string, NamedCommand>): string => {
  const width = Math.max(...[...commands.keys()].map((name) => name.length)) + 3;
  const lines = [...commands].map(([name, command]) => `  ${name.padEnd(width)}${command.summary}`);
  return `Usage: ${program} <command> [arguments]

Commands (tasks: ${describeKinds(kinds)}):
${lines.join("\n")}

Every command takes --help. The task commands take --kubeconfig, --context, -n/--namespace and --kind.
`;
};

/**
 * A command line over `kinds` (the first is what `--kind` defaults to) and the operator's own
 * `commands`: `argv[0]` names the command, the rest are its arguments. Resolves to the exit code:
 * `--help` lists the commands (0); a missing or unknown command lists them on stderr (2).
 */
export const taskCli = (
  kinds: CliKinds,
  options: TaskCliOptions = {},
): ((argv: ReadonlyArray<string>) => Promise<number>) => {
  const program = options.program ?? scriptName() ?? kinds[0].resource.plural;
  const makeIo = (): TaskIo => ({ ...(options.io ?? processIo)(), program });
  const builtIn = describedTaskCommands(makeIo, kinds);
  const commands = new Map<string, NamedCommand>();
  for (const name of kindCommands) {
    const command = builtIn[name];
    if (command !== undefined) commands.set(name, command);
  }
  for (const [name, own] of Object.entries(options.commands ?? {}))
    commands.set(name, {
      summary: own.summary,
      run: async (argv) => {
        const io = makeIo();
        try {
          return await own.run(argv, io);
        } finally {
          io.release?.();
        }
      },
    });
  return async (argv) => {
    const [name, ...rest] = argv;
    const command = name === undefined ? undefined : commands.get(name);
    if (command !== undefined) return command.run(rest);
    const io = makeIo();
    try {
      const usage = usageOf(io.program, kinds, commands);
      if (name === "--help" || name === "-h" || name === "help") {
        io.stdout.write(usage);
        return 0;
      }
      io.stderr.write(
        `${name === undefined ? "a command is needed" : `unknown command ${JSON.stringify(name)}`}\n\n${usage}`,
      );
      return 2;
    } finally {
      io.release?.();
    }
  };
};
