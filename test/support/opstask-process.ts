/**
 * opstask's controller as a process, as deploy/ runs it: the bundled CLI (scripts/bundle.ts, what the
 * image runs), the Deployment's environment (NODE_OPTIONS …, test/support/deployed-env.ts), and the
 * ServiceAccount `opstask-system/opstask` with deploy/'s RBAC (a TokenRequest token in a kubeconfig of
 * its own). For comparisons with etcd-druid in the same cluster. Leader election off (as druid's chart
 * default), metrics on 127.0.0.1, probes off.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import { bundle } from "../../scripts/bundle.ts";
import type { ControlPlane } from "../../src/devcluster/control-plane.ts";
import { writeKubeconfig } from "../../src/devcluster/kubeconfig.ts";
import { freePort } from "../../src/devcluster/ports.ts";
import { type ManagedProcess, startProcess } from "../../src/devcluster/process.ts";
import { repoRoot } from "./cluster.ts";
import { deployedEnv, deployedNodeFlags } from "./deployed-env.ts";
import { applyObjects } from "./druid-process.ts";

export const opstaskNamespace = "opstask-system";
export const opstaskServiceAccount = "opstask";
export const opstaskUser = `system:serviceaccount:${opstaskNamespace}:${opstaskServiceAccount}`;

const rbacFiles = [
  "namespace.yaml",
  "serviceaccount.yaml",
  "clusterrole.yaml",
  "clusterrolebinding.yaml",
  "role.yaml",
  "rolebinding.yaml",
];

/** Applies deploy/'s namespace, ServiceAccount and RBAC (idempotent). */
export const installOpstask = async (plane: ControlPlane): Promise<void> => {
  const objects: KubernetesObject[] = [];
  for (const file of rbacFiles)
    for (const document of parseAllDocuments(readFileSync(join(repoRoot, "deploy", file), "utf8"))) {
      const object = document.toJS() as KubernetesObject | null;
      if (object !== null) objects.push(object);
    }
  await applyObjects(plane.makeKubeConfig(), objects);
};

/** Bundles of processes that are gone (a worker's exit hook does not always run). */
const removeStaleBundles = (): void => {
  const build = join(repoRoot, ".build");
  if (!existsSync(build)) return;
  for (const entry of readdirSync(build)) {
    const pid = Number(/^opstask-peer-(?:plain-)?(\d+)$/.exec(entry)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      rmSync(join(build, entry), { recursive: true, force: true });
    }
  }
};

const bundled = new Map<boolean, Promise<string>>();
/** The CLI bundled once per process (into .build/opstask-peer); unminified for readable profiles. */
export const bundledCli = (minify = true): Promise<string> => {
  const known = bundled.get(minify);
  if (known !== undefined) return known;
  // One directory per process: test files run in parallel workers, and bundle() empties its directory.
  removeStaleBundles();
  const dir = `.build/opstask-peer-${minify ? "" : "plain-"}${process.pid}`;
  const made = bundle("src/cli/main.ts", dir, minify);
  bundled.set(minify, made);
  // The unminified bundle stays: bench/profile-summary.ts reads it to name the source of each line.
  if (minify) process.once("exit", () => rmSync(join(repoRoot, dir), { recursive: true, force: true }));
  return made;
};

export interface OpstaskSettings {
  /** Watched namespaces (default: all, as deployed). */
  readonly namespaces?: readonly string[];
  /** `--resolve` rules (HOST:PORT:ADDRESS). */
  readonly resolve?: readonly string[];
  /** Extra `opstask controller` options as config-file keys (camelCase), e.g. { concurrency: 3 }. */
  readonly options?: Readonly<Record<string, string | number | boolean>>;
  /** Node flags before the script (e.g. --cpu-prof), on top of the Deployment's NODE_OPTIONS. */
  readonly nodeArgs?: readonly string[];
  /** Instead of the Deployment's NODE_OPTIONS (experiments). */
  readonly nodeOptions?: string;
  /** Another bundled CLI than this checkout's (an A/B with an older commit's bundle). */
  readonly cli?: string;
  /** Environment on top of the Deployment's (experiments, e.g. OPSTASK_V8_FLAGS). */
  readonly env?: Readonly<Record<string, string>>;
  readonly logLevel?: "info" | "debug";
  readonly onLine?: (line: string) => void;
}

export interface RunningOpstask {
  readonly process: ManagedProcess;
  readonly pid: number;
  readonly metricsUrl: string;
  readonly lines: () => ReadonlyArray<string>;
  stop(): Promise<void>;
}

/** Starts the controller (after `installOpstask`); resolves once every watched cache is synced. */
export const startOpstask = async (
  plane: ControlPlane,
  settings: OpstaskSettings = {},
): Promise<RunningOpstask> => {
  // Profiled runs keep function names (the deployed bundle is minified; the code is the same).
  const cli =
    settings.cli ??
    (await bundledCli(!(settings.nodeArgs ?? []).some((arg) => arg.startsWith("--cpu-prof"))));
  const token = await plane.serviceAccountToken(opstaskNamespace, opstaskServiceAccount, {
    expirationSeconds: 24 * 3600,
  });
  const metricsPort = await freePort();
  const kubeconfig = join(plane.dir, `opstask-kubeconfig-${metricsPort}`);
  writeKubeconfig(kubeconfig, {
    server: plane.server,
    caPem: plane.caPem,
    token,
    userName: opstaskServiceAccount,
  });
  const configFile = join(plane.dir, `opstask-config-${metricsPort}.yaml`);
  const namespaces = settings.namespaces ?? [];
  writeFileSync(
    configFile,
    stringify({
      kubeconfig,
      // Loopback and read by this process only: plain HTTP (the Deployment serves them securely).
      metricsSecure: false,
      metricsAddress: `127.0.0.1:${metricsPort}`,
      probeAddress: "0",
      logFormat: "json",
      logLevel: settings.logLevel ?? "info",
      ...(namespaces.length === 0 ? {} : { namespace: [...namespaces] }),
      ...(settings.resolve === undefined || settings.resolve.length === 0
        ? {}
        : { resolve: [...settings.resolve] }),
      ...settings.options,
    }),
  );
  const lines: string[] = [];
  let watching = 0;
  const child = startProcess({
    name: "opstask",
    command: process.execPath,
    // As the image runs it: its ENTRYPOINT's node flags first.
    args: [...deployedNodeFlags(), ...(settings.nodeArgs ?? []), cli, "controller", "--config", configFile],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      ...deployedEnv(),
      ...(settings.nodeOptions === undefined ? {} : { NODE_OPTIONS: settings.nodeOptions }),
      ...settings.env,
    },
    cwd: plane.dir,
    scratchDir: plane.dir,
    tailLines: 200,
    onLine: (line) => {
      lines.push(line);
      if (lines.length > 2_000) lines.shift();
      if (line.includes("watching EtcdOpsTasks")) watching += 1;
      settings.onLine?.(line);
    },
  });
  const deadline = Date.now() + 120_000;
  while (watching < Math.max(1, namespaces.length)) {
    const exited = child.exited();
    if (exited !== undefined)
      throw new Error(`opstask exited (${exited.code ?? exited.signal}) while starting:\n${child.tail(40)}`);
    if (Date.now() > deadline) {
      await child.stop(5_000);
      throw new Error(`opstask did not sync its caches within 120 s:\n${child.tail(40)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    process: child,
    pid: child.pid,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    lines: () => lines,
    stop: async () => {
      await child.stop(30_000);
    },
  };
};
