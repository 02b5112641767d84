// A child process with a bounded log tail, a time-bounded stop (SIGTERM, then SIGKILL), and two
// guards against leaks: a synchronous process "exit" hook, and a detached watchdog that kills the
// child (and removes its scratch directory) if this Node process dies without running hooks
// (SIGKILL, OOM, a crashed test worker).
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";

export interface ManagedProcessOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Lines of output kept for error messages. */
  readonly tailLines?: number;
  /** Directory the watchdog removes after killing the child when this process has died. */
  readonly scratchDir?: string;
  /** Called with every output line (e.g. to stream logs while debugging). */
  readonly onLine?: (line: string) => void;
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** The last output lines (stdout and stderr interleaved). */
  tail(lines?: number): string;
  /** Settled once the process has exited; `undefined` while it runs. */
  exited(): ExitInfo | undefined;
  /** Resolves when the process exits. */
  readonly exit: Promise<ExitInfo>;
  /** SIGTERM, then SIGKILL after `timeoutMs`. Resolves once the process is gone. */
  stop(timeoutMs?: number): Promise<ExitInfo>;
}

const running = new Set<ChildProcess>();
const exitCleanups = new Set<() => void>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of running) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const cleanup of exitCleanups) {
      try {
        cleanup();
      } catch {
        // best effort
      }
    }
  });
}

/**
 * Runs `cleanup` (synchronously) if this process exits before the returned unregister function is
 * called. Child processes started with {@link startProcess} are SIGKILLed before the cleanups run.
 */
export function onProcessExit(cleanup: () => void): () => void {
  installExitHook();
  exitCleanups.add(cleanup);
  return () => {
    exitCleanups.delete(cleanup);
  };
}

// Polls the parent every second; when the parent is gone but the child is not, terminates the child
// and removes the scratch directory. Exits by itself when the child exits first.
const WATCHDOG = `
parent="$1"; child="$2"; dir="$3"
while kill -0 "$parent" 2>/dev/null; do
  kill -0 "$child" 2>/dev/null || exit 0
  sleep 1
done
kill -TERM "$child" 2>/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || break; sleep 0.5; done
kill -KILL "$child" 2>/dev/null
[ -n "$dir" ] && rm -rf -- "$dir"
exit 0
`;

function startWatchdog(childPid: number, scratchDir: string | undefined): void {
  try {
    const watchdog = spawn(
      "bash",
      ["-c", WATCHDOG, "opstask-watchdog", String(process.pid), String(childPid), scratchDir ?? ""],
      { detached: true, stdio: "ignore" },
    );
    watchdog.on("error", () => {});
    watchdog.unref();
  } catch {
    // Best effort: the in-process exit hook still applies.
  }
}

export function startProcess(options: ManagedProcessOptions): ManagedProcess {
  const maxLines = options.tailLines ?? 200;
  const lines: string[] = [];
  const push = (line: string): void => {
    lines.push(line);
    if (lines.length > maxLines) lines.splice(0, lines.length - maxLines);
    options.onLine?.(line);
  };

  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });

  let exitInfo: ExitInfo | undefined;
  const exit = new Promise<ExitInfo>((resolve) => {
    child.on("error", (err) => {
      push(`[${options.name}] spawn error: ${err.message}`);
      exitInfo ??= { code: null, signal: null };
      running.delete(child);
      resolve(exitInfo);
    });
    child.on("exit", (code, signal) => {
      exitInfo = { code, signal };
      running.delete(child);
      resolve(exitInfo);
    });
  });

  for (const stream of [child.stdout, child.stderr]) {
    let partial = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      for (const part of parts) push(part);
    });
    stream.on("end", () => {
      if (partial !== "") push(partial);
      partial = "";
    });
  }

  const pid = child.pid;
  if (pid !== undefined) {
    running.add(child);
    installExitHook();
    startWatchdog(pid, options.scratchDir);
  }

  const stop = async (timeoutMs = 10_000): Promise<ExitInfo> => {
    if (exitInfo !== undefined) return exitInfo;
    child.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (exitInfo === undefined) child.kill("SIGKILL");
        resolve();
      }, timeoutMs);
    });
    await Promise.race([exit, killed]);
    const info = await exit;
    clearTimeout(timer);
    return info;
  };

  return {
    name: options.name,
    pid: pid ?? -1,
    tail: (n = 40) => lines.slice(-n).join("\n"),
    exited: () => exitInfo,
    exit,
    stop,
  };
}

/** Removes a directory tree, ignoring errors (used during cleanup). */
export function removeDirSync(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // best effort
  }
}

/** A child process died before it became ready; carries its log tail. */
export class ProcessExitedError extends Error {
  override readonly name = "ProcessExitedError";
  readonly logTail: string;
  constructor(what: string, code: number | null, signal: string | null, logTail: string) {
    super(`${what} exited during startup (code ${String(code)}, signal ${String(signal)})`);
    this.logTail = logTail;
  }
}
