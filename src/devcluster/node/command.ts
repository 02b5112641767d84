// Running a host command (ip, iptables, nsenter, ctr, mount) to completion, with its output in the
// error when it fails: the node's set-up and clean-up are sequences of such commands.
import { execFile } from "node:child_process";

export class CommandFailedError extends Error {
  override readonly name = "CommandFailedError";
  readonly stderr: string;
  constructor(command: string, args: readonly string[], detail: string, stderr: string) {
    super(`${[command, ...args].join(" ")} failed: ${detail}${stderr === "" ? "" : `: ${stderr.trim()}`}`);
    this.stderr = stderr;
  }
}

export interface CommandOptions {
  readonly timeoutMs?: number;
  readonly input?: string;
}

/** Runs `command args…`; resolves with its stdout, rejects with CommandFailedError. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      [...args],
      { timeout: options.timeoutMs ?? 30_000, maxBuffer: 16 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error === null) resolve(stdout);
        else reject(new CommandFailedError(command, args, error.message.split("\n")[0] ?? "", stderr));
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Runs a clean-up command; a failure is returned as text instead of thrown (clean-up goes on). */
export async function tryCommand(command: string, args: readonly string[]): Promise<string | undefined> {
  try {
    await runCommand(command, args);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
