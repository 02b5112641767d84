/**
 * A `TaskIo` that keeps what the task commands print, for tests that run them in-process.
 */
import type { TaskIo } from "../../src/cli/task/io.ts";

export interface Captured {
  out: string;
  err: string;
}

export interface CaptureOptions {
  /** How the commands name themselves in messages (default `opstask`). */
  readonly program?: string;
  readonly tty?: boolean;
  readonly columns?: number;
  readonly signal?: AbortSignal;
}

export const captureTaskIo = (
  options: CaptureOptions = {},
): { readonly io: TaskIo; readonly captured: Captured } => {
  const captured: Captured = { out: "", err: "" };
  const io: TaskIo = {
    stdout: {
      write: (text) => {
        captured.out += text;
      },
      isTTY: options.tty ?? false,
      ...(options.columns === undefined ? {} : { columns: options.columns }),
    },
    stderr: {
      write: (text) => {
        captured.err += text;
      },
      isTTY: false,
    },
    env: {},
    program: options.program ?? "opstask",
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  };
  return { io, captured };
};
