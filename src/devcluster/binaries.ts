// Locating the control-plane binaries: KUBEBUILDER_ASSETS, else the versioned build cache
// (asked from scripts/testbin, which owns the versions), else building them with scripts/testbin.
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  readonly etcd: string;
}

export interface ResolveBinariesOptions {
  /** Build missing binaries with scripts/testbin (default true). */
  readonly build?: boolean;
  /** Upper bound for a cold build (default 45 min). */
  readonly buildTimeoutMs?: number;
  /** Receives scripts/testbin's progress lines. */
  readonly log?: (line: string) => void;
  /** Repository root holding scripts/testbin (default: derived from this file's location). */
  readonly repoRoot?: string;
}

export const defaultRepoRoot = (): string => resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The binaries in KUBEBUILDER_ASSETS, if it is set and holds both. */
export function binariesFromAssets(env: NodeJS.ProcessEnv = process.env): ControlPlaneBinaries | undefined {
  const dir = env.KUBEBUILDER_ASSETS;
  if (dir === undefined || dir === "") return undefined;
  const kubeApiserver = join(dir, "kube-apiserver");
  const etcd = join(dir, "etcd");
  return isExecutable(kubeApiserver) && isExecutable(etcd) ? { kubeApiserver, etcd } : undefined;
}

interface ScriptResult {
  readonly code: number | null;
  readonly paths: ReadonlyMap<string, string>;
  readonly stderrTail: string;
}

/** Runs scripts/testbin with `args`; parses its `name=path` stdout lines. */
export function runTestbinScript(
  args: readonly string[],
  options: {
    readonly repoRoot?: string;
    readonly timeoutMs?: number;
    readonly log?: (line: string) => void;
  } = {},
): Promise<ScriptResult> {
  const script = join(options.repoRoot ?? defaultRepoRoot(), "scripts", "testbin");
  if (!existsSync(script)) {
    return Promise.reject(
      new Error(
        `cannot locate kube-apiserver/etcd: ${script} does not exist and KUBEBUILDER_ASSETS is not set ` +
          "(set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd)",
      ),
    );
  }
  return new Promise((resolvePromise, reject) => {
    const child = spawn("bash", [script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    const stderrLines: string[] = [];
    let partial = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      for (const line of parts) {
        stderrLines.push(line);
        if (stderrLines.length > 40) stderrLines.shift();
        options.log?.(line);
      }
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill("SIGTERM");
            reject(new Error(`scripts/testbin ${args.join(" ")} timed out after ${options.timeoutMs} ms`));
          }, options.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (partial !== "") stderrLines.push(partial);
      const paths = new Map<string, string>();
      for (const line of stdout.split("\n")) {
        const eq = line.indexOf("=");
        if (eq > 0) paths.set(line.slice(0, eq), line.slice(eq + 1));
      }
      resolvePromise({ code, paths, stderrTail: stderrLines.join("\n") });
    });
  });
}

function fromPaths(paths: ReadonlyMap<string, string>): ControlPlaneBinaries | undefined {
  const kubeApiserver = paths.get("kube-apiserver");
  const etcd = paths.get("etcd");
  if (kubeApiserver === undefined || etcd === undefined) return undefined;
  return isExecutable(kubeApiserver) && isExecutable(etcd) ? { kubeApiserver, etcd } : undefined;
}

/** Finds (or builds) kube-apiserver and etcd. */
export async function resolveBinaries(options: ResolveBinariesOptions = {}): Promise<ControlPlaneBinaries> {
  const fromEnv = binariesFromAssets();
  if (fromEnv !== undefined) return fromEnv;

  const scriptOptions = {
    ...(options.repoRoot !== undefined ? { repoRoot: options.repoRoot } : {}),
  };
  const checked = await runTestbinScript(["--check"], { ...scriptOptions, timeoutMs: 30_000 });
  const cached = checked.code === 0 ? fromPaths(checked.paths) : undefined;
  if (cached !== undefined) return cached;
  if (options.build === false) {
    throw new Error(`kube-apiserver/etcd are not built; run scripts/testbin\n${checked.stderrTail}`);
  }

  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(
    "devcluster: building kube-apiserver and etcd with scripts/testbin (first run only; may take 10-20 min)",
  );
  const built = await runTestbinScript([], {
    ...scriptOptions,
    timeoutMs: options.buildTimeoutMs ?? 45 * 60_000,
    log,
  });
  const binaries = built.code === 0 ? fromPaths(built.paths) : undefined;
  if (binaries === undefined) {
    throw new Error(`scripts/testbin failed (exit ${String(built.code)}):\n${built.stderrTail}`);
  }
  return binaries;
}
