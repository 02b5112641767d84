// containerd for the node: Debian's containerd 1.6 with a configuration, root, state directory and
// socket of its own (nothing of a host containerd is used or touched), started inside the node's
// network namespace so that the CNI plugins it runs create the pods' interfaces there.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Deadline, pollUntil } from "../deadline.ts";
import { type ManagedProcess, ProcessExitedError, startProcess } from "../process.ts";
import { runCommand } from "./command.ts";
import { taskBundles } from "./mounts.ts";
import { BRIDGE } from "./network.ts";
import type { NodeSlot } from "./node-slot.ts";

export const CNI_BIN_DIR = "/usr/lib/cni";
/** The CRI plugin's namespace: where the kubelet's images and containers live. */
const K8S_NAMESPACE = "k8s.io";

export interface ContainerdPaths {
  readonly root: string;
  readonly state: string;
  readonly socket: string;
  readonly config: string;
  readonly cniConfDir: string;
  readonly ipamDir: string;
}

export const containerdPaths = (dir: string): ContainerdPaths => ({
  root: join(dir, "containerd", "root"),
  state: join(dir, "containerd", "state"),
  socket: join(dir, "containerd", "containerd.sock"),
  config: join(dir, "containerd", "config.toml"),
  cniConfDir: join(dir, "cni", "net.d"),
  ipamDir: join(dir, "cni", "ipam"),
});

const toml = (value: string): string => JSON.stringify(value);

function containerdConfig(paths: ContainerdPaths, sandboxImage: string): string {
  return `version = 2
root = ${toml(paths.root)}
state = ${toml(paths.state)}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = ${toml(paths.socket)}
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = ${toml(sandboxImage)}
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_apparmor = true
    # This VM's processes lack CAP_SYS_RESOURCE: runc cannot lower oom_score_adj to the kubelet's -998.
    restrict_oom_score_adj = true
    enable_selinux = false
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = ${toml(CNI_BIN_DIR)}
      conf_dir = ${toml(paths.cniConfDir)}
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
`;
}

/**
 * The pods' network: the bridge (created beforehand with its gateway address) and host-local IPAM
 * in the node's subnet; routes only to 198.18.0.0/15 (no default route), no masquerade.
 */
function cniConfig(slot: NodeSlot, paths: ContainerdPaths): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "opstask-node",
      plugins: [
        {
          type: "bridge",
          bridge: BRIDGE,
          isGateway: false,
          isDefaultGateway: false,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            dataDir: paths.ipamDir,
            ranges: [
              [{ subnet: slot.podCidr, rangeStart: `198.18.${slot.slot}.10`, gateway: slot.gatewayAddress }],
            ],
            routes: [{ dst: "198.18.0.0/15" }],
          },
        },
      ],
    },
    null,
    2,
  );
}

export interface RunningContainerd {
  readonly process: ManagedProcess;
  readonly paths: ContainerdPaths;
}

export interface ContainerdOptions {
  readonly slot: NodeSlot;
  readonly dir: string;
  readonly sandboxImage: string;
  readonly deadline: Deadline;
  readonly onLine?: (line: string) => void;
}

/** Writes the configuration, starts containerd in the node's namespace and waits for its socket. */
export async function startContainerd(options: ContainerdOptions): Promise<RunningContainerd> {
  const paths = containerdPaths(options.dir);
  for (const dir of [paths.root, paths.state, paths.cniConfDir, paths.ipamDir])
    mkdirSync(dir, { recursive: true });
  writeFileSync(paths.config, containerdConfig(paths, options.sandboxImage));
  writeFileSync(join(paths.cniConfDir, "10-opstask-node.conflist"), cniConfig(options.slot, paths));
  const proc = startProcess({
    name: "containerd",
    command: "nsenter",
    args: [`--net=/run/netns/${options.slot.netns}`, "--", "containerd", "--config", paths.config],
    ...(options.onLine !== undefined ? { onLine: options.onLine } : {}),
  });
  try {
    await pollUntil(
      async () => {
        await ctr(paths, ["version"], 2000);
        return true;
      },
      {
        deadline: options.deadline,
        what: "containerd's socket",
        intervalMs: 100,
        abortIf: () => {
          const exited = proc.exited();
          if (exited !== undefined)
            throw new ProcessExitedError("containerd", exited.code, exited.signal, proc.tail());
        },
      },
    );
  } catch (err) {
    await proc.stop(2000);
    throw err;
  }
  return { process: proc, paths };
}

const ctr = (paths: ContainerdPaths, args: readonly string[], timeoutMs = 120_000) =>
  runCommand("ctr", ["--address", paths.socket, "--namespace", K8S_NAMESPACE, ...args], { timeoutMs });

/** Imports a docker-archive or OCI archive into the kubelet's image store. */
export async function importImage(paths: ContainerdPaths, archive: string): Promise<void> {
  if (!existsSync(archive))
    throw new Error(`loadImage: ${archive} does not exist (expected an image archive)`);
  await ctr(paths, ["images", "import", "--all-platforms", archive]);
}

/**
 * PIDs of containerd-shim processes serving this containerd: they outlive it by design, and one
 * killed mid-start is known to no one else. Found by the `-address <our socket>` argument.
 */
export function shimProcesses(paths: ContainerdPaths): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (!(args[0] ?? "").includes("containerd-shim")) continue;
      const at = args.indexOf("-address");
      if (at >= 0 && args[at + 1] === paths.socket) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * The IDs of the pod sandboxes this containerd made and has not removed: its CRI plugin's sandbox
 * directories (in its root and its state) and the tasks' bundles (a sandbox's task has its ID).
 */
export function sandboxIds(paths: ContainerdPaths): Set<string> {
  const ids = new Set(taskBundles(paths.state).map((bundle) => bundle.id));
  for (const base of [paths.root, paths.state]) {
    const dir = join(base, "io.containerd.grpc.v1.cri", "sandboxes");
    if (existsSync(dir)) for (const id of readdirSync(dir)) ids.add(id);
  }
  return ids;
}

/**
 * What the shims keep outside the node's directory, per task: runc's state
 * (/run/containerd/runc/k8s.io/<id>) and the shim's socket (/run/containerd/s/<sha256>).
 */
export function removeShimLeftovers(paths: ContainerdPaths): void {
  for (const { id } of taskBundles(paths.state)) {
    rmSync(join("/run/containerd/runc", K8S_NAMESPACE, id), { recursive: true, force: true });
    const socketHash = createHash("sha256")
      .update(join(paths.socket, K8S_NAMESPACE, id))
      .digest("hex");
    rmSync(join("/run/containerd/s", socketHash), { force: true });
  }
  // Shared parents: removed only when no one else (another node) uses them any more.
  for (const dir of [
    join("/run/containerd/runc", K8S_NAMESPACE),
    "/run/containerd/runc",
    "/run/containerd/s",
    "/run/containerd/fifo",
    "/run/containerd",
  ]) {
    try {
      if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
    } catch {
      // in use
    }
  }
}
