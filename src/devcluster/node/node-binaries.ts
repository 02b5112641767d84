// Locating the node's binaries: scripts/testbin's `node` group (built once, cached by version).
import { type ResolveBinariesOptions, runTestbinScript } from "../binaries.ts";

export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeScheduler: string;
  readonly kubeControllerManager: string;
  /** For people and test pods (an in-cluster client); the node does not need it. */
  readonly kubectl: string;
  readonly coredns: string;
  /** The pause program (for the sandbox image; images are built by src/devcluster/images). */
  readonly pause: string;
}

const NAMES = {
  kubelet: "kubelet",
  kubeProxy: "kube-proxy",
  kubeScheduler: "kube-scheduler",
  kubeControllerManager: "kube-controller-manager",
  kubectl: "kubectl",
  coredns: "coredns",
  pause: "pause",
} as const;

function fromPaths(paths: ReadonlyMap<string, string>): NodeBinaries | undefined {
  const entries = Object.entries(NAMES).map(([key, name]) => [key, paths.get(name)] as const);
  if (entries.some(([, path]) => path === undefined)) return undefined;
  return Object.fromEntries(entries) as unknown as NodeBinaries;
}

/** Finds (or builds, ~4 min with a warm Go cache, ~20 min cold) the node's binaries. */
export async function resolveNodeBinaries(options: ResolveBinariesOptions = {}): Promise<NodeBinaries> {
  const scriptOptions = options.repoRoot !== undefined ? { repoRoot: options.repoRoot } : {};
  const checked = await runTestbinScript(["--check", "node"], { ...scriptOptions, timeoutMs: 30_000 });
  const cached = checked.code === 0 ? fromPaths(checked.paths) : undefined;
  if (cached !== undefined) return cached;
  if (options.build === false)
    throw new Error(
      `the local node's binaries are not built; run scripts/testbin node\n${checked.stderrTail}`,
    );
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  log(
    "local node: building kubelet, kube-proxy, kube-scheduler, kube-controller-manager, CoreDNS with scripts/testbin node",
  );
  const built = await runTestbinScript(["node"], {
    ...scriptOptions,
    timeoutMs: options.buildTimeoutMs ?? 45 * 60_000,
    log,
  });
  const binaries = built.code === 0 ? fromPaths(built.paths) : undefined;
  if (binaries === undefined)
    throw new Error(`scripts/testbin node failed (exit ${String(built.code)}):\n${built.stderrTail}`);
  return binaries;
}
