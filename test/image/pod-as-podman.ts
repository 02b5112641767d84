/**
 * The controller container of deploy/deployment.yaml as a `podman run` command line, derived from the
 * manifest rather than restated, so that the image check runs what the Deployment would run: its
 * arguments, environment, user and group, read-only root filesystem, dropped capabilities, no
 * privilege escalation, memory and CPU limits, its emptyDir volumes as size-limited tmpfs, and the
 * service-account token where the kubelet mounts it (the controller then loads the in-cluster
 * configuration, as in a pod).
 *
 * Two deliberate differences, both forced by running on a shared host rather than in a pod network:
 * `--network host` (the container reaches the local kube-apiserver and etcd-backup-restore on
 * 127.0.0.1), and the metrics and probe listeners moved from `:8080`/`:8081` (every interface) to
 * free loopback ports.
 */
import type { V1Container, V1Deployment, V1PodSpec } from "@kubernetes/client-node";

export interface PodmanRunInput {
  readonly deployment: V1Deployment;
  readonly image: string;
  readonly containerName: string;
  /** A directory holding `token`, `ca.crt` and `namespace`, as the kubelet projects them. */
  readonly serviceAccountDir: string;
  /** Where the kube-apiserver listens (the kubelet's KUBERNETES_SERVICE_HOST/PORT). */
  readonly apiserver: { readonly host: string; readonly port: number };
  /** Loopback addresses replacing the Deployment's --metrics-address and --probe-address. */
  readonly metricsAddress: string;
  readonly probeAddress: string;
  /** Arguments appended after the Deployment's (e.g. --resolve for the test's etcd host name). */
  readonly extraArgs?: readonly string[];
}

/** What podman needs on these machines (see README, "The image"): runc, cgroupfs, bounded ulimits. */
export const podmanGlobalArgs = ["--cgroup-manager", "cgroupfs"] as const;
const hostArgs = [
  "--runtime",
  "runc",
  "--ulimit",
  "nofile=1024:1024",
  "--ulimit",
  "nproc=1024:1024",
  "--network",
  "host",
] as const;

const serviceAccountMount = "/var/run/secrets/kubernetes.io/serviceaccount";

export type PodmanArgs =
  | { readonly ok: true; readonly args: string[] }
  | { readonly ok: false; readonly reason: string };

/** Kubernetes memory quantities as podman sizes: `256Mi` → `256m` (podman's m is MiB). */
const size = (quantity: string): string | undefined => {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (match === null) return undefined;
  const [, amount, unit] = match;
  return `${amount}${unit === undefined ? "" : unit[0]?.toLowerCase()}`;
};

/** Kubernetes CPU quantities as podman --cpus: `1` → `1`, `500m` → `0.5`. */
const cpus = (quantity: string): string | undefined => {
  if (/^\d+(\.\d+)?$/.test(quantity)) return quantity;
  const milli = /^(\d+)m$/.exec(quantity)?.[1];
  return milli === undefined ? undefined : String(Number(milli) / 1000);
};

const replaceFlag = (args: readonly string[], flag: string, value: string): string[] | undefined => {
  const at = args.findIndex((arg) => arg.startsWith(`--${flag}=`));
  return at === -1 ? undefined : args.map((arg, i) => (i === at ? `--${flag}=${value}` : arg));
};

const container = (pod: V1PodSpec): V1Container | undefined =>
  pod.containers.length === 1 ? pod.containers[0] : undefined;

export const podmanRunArgs = (input: PodmanRunInput): PodmanArgs => {
  const pod = input.deployment.spec?.template.spec;
  const main = pod === undefined ? undefined : container(pod);
  if (pod === undefined || main === undefined)
    return { ok: false, reason: "the Deployment must have a pod spec with exactly one container" };
  if (main.command !== undefined)
    return { ok: false, reason: "the container sets command; the check runs the image's entrypoint" };
  const security = main.securityContext ?? {};
  const user = security.runAsUser ?? pod.securityContext?.runAsUser;
  const group = security.runAsGroup ?? pod.securityContext?.runAsGroup;
  if (user === undefined || user === 0 || group === undefined)
    return { ok: false, reason: "the Deployment must set a non-root runAsUser and a runAsGroup" };

  let args: string[] | undefined = [...(main.args ?? [])];
  args = replaceFlag(args, "metrics-address", input.metricsAddress);
  args = args && replaceFlag(args, "probe-address", input.probeAddress);
  if (args === undefined)
    return { ok: false, reason: "the container's args must set --metrics-address= and --probe-address=" };

  const options: string[] = ["--name", input.containerName, "--user", `${user}:${group}`];
  if (security.readOnlyRootFilesystem === true) options.push("--read-only");
  for (const capability of security.capabilities?.drop ?? []) options.push("--cap-drop", capability);
  if (security.allowPrivilegeEscalation === false) options.push("--security-opt", "no-new-privileges");
  const limits = main.resources?.limits ?? {};
  if (limits.memory !== undefined) {
    const memory = size(String(limits.memory));
    if (memory === undefined) return { ok: false, reason: `memory limit ${limits.memory} is not understood` };
    options.push("--memory", memory);
  }
  if (limits.cpu !== undefined) {
    const cpu = cpus(String(limits.cpu));
    if (cpu === undefined) return { ok: false, reason: `cpu limit ${limits.cpu} is not understood` };
    options.push("--cpus", cpu);
  }
  for (const mount of main.volumeMounts ?? []) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (volume?.emptyDir === undefined)
      return { ok: false, reason: `volume ${mount.name}: only emptyDir volumes can be run here` };
    const limit =
      volume.emptyDir.sizeLimit === undefined ? undefined : size(String(volume.emptyDir.sizeLimit));
    options.push("--tmpfs", `${mount.mountPath}:rw,mode=1777${limit === undefined ? "" : `,size=${limit}`}`);
  }
  if (pod.automountServiceAccountToken !== false)
    options.push("--volume", `${input.serviceAccountDir}:${serviceAccountMount}:ro`);
  options.push(
    "--env",
    `KUBERNETES_SERVICE_HOST=${input.apiserver.host}`,
    "--env",
    `KUBERNETES_SERVICE_PORT=${input.apiserver.port}`,
  );
  for (const variable of main.env ?? []) {
    if (variable.value === undefined)
      return { ok: false, reason: `env ${variable.name}: only literal values can be run here` };
    options.push("--env", `${variable.name}=${variable.value}`);
  }
  return { ok: true, args: [...hostArgs, ...options, input.image, ...args, ...(input.extraArgs ?? [])] };
};
