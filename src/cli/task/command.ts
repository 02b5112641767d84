/**
 * How a task command runs: usage on `--help`, arguments parsed before anything is sent (a bad one
 * exits 2 naming the option), the request program run with Ctrl-C as interruption, and API errors
 * printed as one line (exit 1; 2 when the API server refuses the task as invalid).
 */
import * as Cause from "effect/Cause";
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import * as Logger from "effect/Logger";
import { terminalText } from "../../api/terminal-text.ts";
import type { KubeError } from "../../kube/errors.ts";
import { OptionError } from "../options.ts";
import type { CliKind } from "./cli-kind.ts";
import type { TaskIo } from "./io.ts";

/** What `prepare` hands back: the request program, and the kind it reads (named in an API error's hint). */
export interface Prepared {
  readonly kind: CliKind;
  readonly run: Effect.Effect<number, KubeError>;
}

export interface TaskCommandSpec {
  readonly name: string;
  /** One line for the CLI's list of commands (`{program} --help`). */
  readonly summary: string;
  /** Usage text, `{program}` standing for how the user calls the CLI (`opstask`, `kubectl opstask`, …). */
  readonly usage: string;
  /** The exit code when Ctrl-C ends the command (`get -w`: 0, it is how a watch ends). */
  readonly interruptedExit: number;
  /** Parses `argv` and loads the kubeconfig (rejecting with `OptionError`); resolves to the program to run. */
  readonly prepare: (argv: ReadonlyArray<string>, io: TaskIo) => Promise<Prepared> | Prepared;
}

export type TaskCommand = (argv: ReadonlyArray<string>) => Promise<number>;

/** The next thing to check after an API error of `reason` while reading `kind`'s tasks. */
export const apiErrorHint = (reason: KubeError["reason"], kind: CliKind): string | undefined => {
  switch (reason) {
    case "Unauthorized":
      return "check the credentials of the kubeconfig";
    case "Forbidden":
      return `the user lacks permission for ${kind.resource.plural}.${kind.resource.group} (or Events) in this namespace`;
    case "NotFound":
      return `check the name and the namespace (-n); is the ${kind.resource.kind} CRD (${kind.resource.plural}.${kind.resource.group}) installed?`;
    case "Transient":
      return "is the cluster reachable?";
    default:
      return undefined;
  }
};

export const usageOf = (spec: Pick<TaskCommandSpec, "usage">, io: TaskIo): string =>
  spec.usage.replaceAll("{program}", io.program);

export const runTaskCommand =
  (spec: TaskCommandSpec, makeIo: () => TaskIo): TaskCommand =>
  async (argv) => {
    const io = makeIo();
    try {
      if (argv.includes("--help") || argv.includes("-h")) {
        io.stdout.write(usageOf(spec, io));
        return 0;
      }
      let prepared: Prepared;
      try {
        prepared = await spec.prepare(argv, io);
      } catch (error) {
        if (!(error instanceof OptionError)) throw error;
        io.stderr.write(`${io.program} ${spec.name}: ${error.message}\n`);
        return 2;
      }
      const exit = await Effect.runPromiseExit(
        prepared.run.pipe(
          Effect.catchTag("KubeError", (error) =>
            Effect.sync(() => {
              const hint = apiErrorHint(error.reason, prepared.kind);
              io.stderr.write(
                `${io.program} ${spec.name}: ${error.reason}${error.code === 0 ? "" : ` (${error.code})`}: ${terminalText(error.message)}${
                  hint === undefined ? "" : `\n  hint: ${hint}`
                }\n`,
              );
              // The API server refused what the user typed (an invalid task, a bad label selector).
              return error.reason === "Invalid" || error.code === 400 ? 2 : 1;
            }),
          ),
          // The informer logs its retries; a command's output is its own.
          Effect.provide(Logger.layer([])),
        ),
        io.signal === undefined ? {} : { signal: io.signal },
      );
      if (Exit.isSuccess(exit)) return exit.value;
      if (Cause.hasInterruptsOnly(exit.cause)) return spec.interruptedExit;
      throw Cause.squash(exit.cause);
    } finally {
      io.release?.();
    }
  };
