/**
 * Where the task commands read and write. Everything a command touches outside the cluster goes
 * through a `TaskIo`, so that tests run the commands in-process with captured output, and a TTY can
 * be simulated to check the one-line progress display.
 */

export interface Output {
  write(text: string): void;
  /** A terminal: `--wait` redraws one progress line in place instead of printing a line per change. */
  readonly isTTY: boolean;
  /** The terminal's width, when known: a progress line is cut to fit, or `\r` could not redraw it. */
  readonly columns?: number;
}

export interface TaskIo {
  readonly stdout: Output;
  readonly stderr: Output;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C: a wait reports where the task stands, `get -w` ends. */
  readonly signal?: AbortSignal;
  /** How the user calls us, for usage texts and hints: `opstask` or `kubectl opstask`. */
  readonly program: string;
  /** Called once the command is done (removes the Ctrl-C handler of `processIo`). */
  readonly release?: () => void;
  /**
   * Asks the user `question` and resolves with the line they typed; undefined when nobody can answer
   * (stdin is not a terminal), so a destructive command asks for `--yes` instead.
   */
  readonly ask?: (question: string) => Promise<string | undefined>;
}

/** The process's own streams; Ctrl-C aborts the command's signal while it runs. */
export const processIo = (): TaskIo => {
  const interrupted = new AbortController();
  const onSigint = (): void => interrupted.abort();
  process.once("SIGINT", onSigint);
  const output = (stream: NodeJS.WriteStream): Output => ({
    write: (text) => {
      stream.write(text);
    },
    isTTY: stream.isTTY === true,
    ...(stream.isTTY === true && stream.columns > 0 ? { columns: stream.columns } : {}),
  });
  return {
    stdout: output(process.stdout),
    stderr: output(process.stderr),
    env: process.env,
    signal: interrupted.signal,
    program: process.env.OPSTASK_PROGRAM ?? "opstask",
    release: () => {
      process.removeListener("SIGINT", onSigint);
    },
    ask: async (question) => {
      if (process.stdin.isTTY !== true) return undefined;
      const { createInterface } = await import("node:readline/promises");
      const lines = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await lines.question(question);
      } finally {
        lines.close();
      }
    },
  };
};
