// A local Kubernetes cluster with one real node, for end-to-end tests and `opstask dev --cluster`:
// the control plane of src/devcluster (etcd + kube-apiserver) plus kube-scheduler,
// kube-controller-manager, containerd, kubelet, kube-proxy and CoreDNS. Images are built locally
// (src/devcluster/images) and loaded with loadImage: there is no registry.
//
//   const cluster = await startLocalCluster({ sandboxImage: images.pause });
//   await cluster.loadImage(images.busybox.archive);
//   ...                                          // cluster.kubeconfigPath, cluster.makeKubeConfig()
//   await cluster.stop();
//
// The node runs in a network namespace of its own (network.ts); see docs/local-control-plane.md for
// the design and its pitfalls. Needs root, Linux, and scripts/system-deps node.

import { Resolver } from "node:dns/promises";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from "../control-plane.ts";
import { type Deadline, deadlineIn, pollUntil } from "../deadline.ts";
import { CLUSTER_NAME, writeKubeconfig } from "../kubeconfig.ts";
import { LogTail } from "../log-tail.ts";
import { type ManagedProcess, ProcessExitedError } from "../process.ts";
import { createNodeCgroup } from "./cgroups.ts";
import { runCommand } from "./command.ts";
import { importImage, type RunningContainerd, startContainerd } from "./containerd.ts";
import { startControllers } from "./controllers.ts";
import { CLUSTER_DOMAIN, startCoreDns } from "./coredns.ts";
import { readSysctls } from "./host-sysctls.ts";
import { startKubeProxy } from "./kube-proxy.ts";
import { KubeletClientUser, startKubelet, writeKubeletClientTls } from "./kubelet.ts";
import { createNodeNetwork, SERVICE_CIDR } from "./network.ts";
import { type NodeBinaries, resolveNodeBinaries } from "./node-binaries.ts";
import {
  claimSlot,
  ownerAlive,
  readSlotRecords,
  releaseSlot,
  type SlotRecord,
  slotRecordPath,
  updateSlotRecord,
} from "./node-slot.ts";
import { checkNodePrerequisites } from "./prerequisites.ts";
import { startSweepWatchdog } from "./sweep-watchdog.ts";
import { cleanUpNode, sweepDeadNodes } from "./teardown.ts";

/** A locally built image: its reference and the archive loadImage takes (src/devcluster/images). */
export interface LocalImage {
  readonly ref: string;
  readonly archive: string;
}

export interface LocalClusterOptions
  extends Omit<ControlPlaneOptions, "bindAddress" | "serviceAccounts" | "startTimeoutMs"> {
  /** containerd's sandbox ("pause") image; loaded before the kubelet starts. */
  readonly sandboxImage: LocalImage;
  /** More image archives to load before the cluster is reported ready. */
  readonly images?: readonly string[];
  readonly nodeBinaries?: NodeBinaries;
  /** Bound for bringing everything up until the node is Ready and DNS answers (default 120 s). */
  readonly startTimeoutMs?: number;
}

export interface LocalCluster {
  readonly controlPlane: ControlPlane;
  /** Admin kubeconfig (system:masters); the server is reachable from the host and from pods. */
  readonly kubeconfigPath: string;
  /** https://<host end of the node's veth>:<port> */
  readonly apiserverUrl: string;
  readonly nodeName: string;
  /** The node's InternalIP (kubelet, NodePorts). */
  readonly nodeAddress: string;
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** Cluster DNS (CoreDNS), reachable from the host too. */
  readonly dnsAddress: string;
  readonly clusterDomain: string;
  /** The node's network namespace (`ip netns exec <it> …`). */
  readonly netns: string;
  /** Everything the node adds to the host (names, addresses, cgroup, directory): what stop() removes. */
  readonly footprint: SlotRecord;
  /** Wall time of startLocalCluster after the binaries were located, in ms. */
  readonly startupMs: number;
  makeKubeConfig(user?: string): KubeConfig;
  /** Imports an image archive (docker-archive or OCI) into the node's containerd. */
  loadImage(archive: string): Promise<void>;
  /** Runs a command in the node's network namespace (e.g. to reach a Service address); its stdout. */
  run(command: string, args: readonly string[]): Promise<string>;
  /** Creates a namespace and waits until pods can be created in it (its `default` ServiceAccount). */
  createNamespace(prefix?: string): Promise<string>;
  /** The running processes of the node (e.g. to read their RSS). */
  processes(): Readonly<Record<string, ManagedProcess>>;
  /** Recent output of every component. */
  logs(lines?: number): string;
  /** Stops everything and removes every trace from the host; returns (and logs) what was left. Idempotent. */
  stop(): Promise<void>;
}

const COREDNS_USER = "system:coredns";

/**
 * Lets CoreDNS read what it serves (as upstream's system:coredns ClusterRole), and kube-apiserver's
 * kubelet client use the kubelet's API (logs, exec, port-forward: system:kubelet-api-admin, as kubeadm).
 */
async function grantNodeClients(kc: KubeConfig): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: KubeletClientUser },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "system:kubelet-api-admin",
      },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: KubeletClientUser }],
    },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name: COREDNS_USER },
      rules: [
        {
          apiGroups: [""],
          resources: ["endpoints", "services", "pods", "namespaces"],
          verbs: ["list", "watch"],
        },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: COREDNS_USER },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: COREDNS_USER },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: COREDNS_USER }],
    },
  });
}

async function waitForServiceAccount(kc: KubeConfig, namespace: string, deadline: Deadline): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await pollUntil(
    async () => {
      await core.readNamespacedServiceAccount({ namespace, name: "default" });
      await core.readNamespacedConfigMap({ namespace, name: "kube-root-ca.crt" });
      return true;
    },
    { deadline, what: `ServiceAccount ${namespace}/default and ConfigMap kube-root-ca.crt`, intervalMs: 100 },
  );
}

async function waitForNodeReady(kc: KubeConfig, nodeName: string, deadline: Deadline, abortIf: () => void) {
  const core = kc.makeApiClient(CoreV1Api);
  await pollUntil(
    async () => {
      const node = await core.readNode({ name: nodeName });
      const ready = node.status?.conditions?.find((c) => c.type === "Ready");
      if (ready?.status !== "True")
        throw new Error(`node ${nodeName} Ready=${ready?.status ?? "unknown"}: ${ready?.message ?? ""}`);
      return true;
    },
    { deadline, what: `node ${nodeName} Ready`, intervalMs: 200, abortIf },
  );
}

async function waitForDns(dnsAddress: string, deadline: Deadline, abortIf: () => void): Promise<void> {
  const resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([dnsAddress]);
  const name = `kubernetes.default.svc.${CLUSTER_DOMAIN}`;
  await pollUntil(
    async () => {
      const addresses = await resolver.resolve4(name);
      if (!addresses.includes("198.19.0.1")) throw new Error(`${name} resolved to ${addresses.join(", ")}`);
      return true;
    },
    { deadline, what: `CoreDNS answering ${name}`, intervalMs: 200, abortIf },
  );
}

/** GET /readyz through the `kubernetes` Service's address, from the node's namespace, as a pod would. */
async function waitForKubernetesService(
  netns: string,
  caPem: string,
  token: string,
  deadline: Deadline,
  abortIf: () => void,
): Promise<void> {
  const script = `require("node:https").get({host:"198.19.0.1",port:443,path:"/readyz",ca:process.env.CA,headers:{authorization:"Bearer "+process.env.TOKEN},timeout:2000},(r)=>process.exit(r.statusCode===200?0:3)).on("error",(e)=>{console.error(e.message);process.exit(4)})`;
  await pollUntil(
    async () => {
      await runCommand(
        "nsenter",
        [
          `--net=/run/netns/${netns}`,
          "--",
          "env",
          `CA=${caPem}`,
          `TOKEN=${token}`,
          process.execPath,
          "-e",
          script,
        ],
        { timeoutMs: 5000 },
      );
      return true;
    },
    { deadline, what: "the kubernetes Service (198.19.0.1:443) from the node", intervalMs: 300, abortIf },
  );
}

export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const verbose = options.verbose ?? process.env.OPSTASK_DEVCLUSTER_VERBOSE === "1";
  const log = options.log ?? (verbose ? (line: string) => process.stderr.write(`${line}\n`) : () => {});
  await checkNodePrerequisites();
  const leftovers = await sweepDeadNodes(log);
  if (leftovers.length > 0) log(`local node: an earlier run's leftovers remain: ${leftovers.join("; ")}`);
  const nodeBinaries =
    options.nodeBinaries ??
    (await resolveNodeBinaries({
      log,
      ...(options.build !== undefined ? { build: options.build } : {}),
      ...(options.buildTimeoutMs !== undefined ? { buildTimeoutMs: options.buildTimeoutMs } : {}),
    }));

  const started = Date.now();
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const deadline = deadlineIn(startTimeoutMs, "startLocalCluster");
  const dir = mkdtempSync(join(options.tmpDir ?? tmpdir(), "opstask-node-"));
  const claimed = claimSlot(process.pid, dir);
  if (claimed === undefined)
    throw new Error("local node: all 63 node slots of this machine are taken (/run/opstask-node)");
  let record: SlotRecord = claimed;
  startSweepWatchdog(slotRecordPath(record.slot));
  const nodeName = `opstask-node-${record.slot}`;
  const tails = new LogTail(300, verbose);
  const procs: Record<string, ManagedProcess> = {};
  let containerd: RunningContainerd | undefined;
  let plane: ControlPlane | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const began = Date.now();
      const { kubelet, containerd: _c, ...rest } = procs;
      await Promise.all(Object.values(rest).map((p) => p.stop(3000)));
      await kubelet?.stop(5000);
      await containerd?.process.stop(3000);
      await plane?.stop();
      const problems = await cleanUpNode(record);
      log(`local node: stopped in ${Date.now() - began} ms`);
      if (problems.length > 0) {
        const message = `local node: clean-up left: ${problems.join("; ")}`;
        log(message);
        throw new Error(message);
      }
    })();
    return stopping;
  };

  const abortIfExited = () => {
    for (const p of Object.values(procs)) {
      const exited = p.exited();
      if (exited !== undefined) throw new ProcessExitedError(p.name, exited.code, exited.signal, p.tail());
    }
  };

  try {
    await createNodeNetwork(record);
    createNodeCgroup(record.cgroupName);
    const users = [
      { name: `system:node:${nodeName}`, groups: ["system:nodes", "system:masters"] },
      { name: "system:kube-controller-manager", groups: ["system:masters"] },
      { name: "system:kube-scheduler", groups: [] },
      { name: "system:kube-proxy", groups: [] },
      { name: COREDNS_USER, groups: [] },
      ...(options.users ?? []),
    ];
    const kubeletClient = writeKubeletClientTls(join(dir, "kubelet-client"));
    const startingPlane = startControlPlane({
      ...options,
      apiserverArgs: [
        ...(options.apiserverArgs ?? []),
        `--kubelet-client-certificate=${kubeletClient.certFile}`,
        `--kubelet-client-key=${kubeletClient.keyFile}`,
      ],
      log,
      users,
      bindAddress: record.hostAddress,
      serviceAccounts: true,
      startTimeoutMs,
    });
    const startingContainerd = startContainerd({
      slot: record,
      dir,
      sandboxImage: options.sandboxImage.ref,
      deadline,
      onLine: tails.sink("containerd"),
    }).then(async (running) => {
      containerd = running;
      procs.containerd = running.process;
      for (const archive of [options.sandboxImage.archive, ...(options.images ?? [])])
        await importImage(running.paths, archive);
      return running;
    });
    // Both settle before a failure of either is handled, so that stop() sees whatever did start.
    const [planeResult, containerdResult] = await Promise.allSettled([
      startingPlane.then((p) => {
        plane = p;
        return p;
      }),
      startingContainerd,
    ]);
    if (planeResult.status === "rejected") throw planeResult.reason;
    if (containerdResult.status === "rejected") throw containerdResult.reason;
    const cp = planeResult.value;
    const runtime = containerdResult.value;
    log(`local node: control plane and containerd up after ${Date.now() - started} ms`);

    const kubeconfigs = join(dir, "kubeconfigs");
    mkdirSync(kubeconfigs, { recursive: true });
    const kubeconfigOf = (user: string): string => {
      const path = join(kubeconfigs, user.replaceAll(":", "-"));
      writeKubeconfig(path, { server: cp.server, caPem: cp.caPem, token: cp.tokenFor(user), userName: user });
      return path;
    };
    const rootCa = join(kubeconfigs, "ca.crt");
    writeFileSync(rootCa, cp.caPem);
    await grantNodeClients(cp.makeKubeConfig());

    const running = readSlotRecords().find((other) => other.slot !== record.slot && ownerAlive(other));
    record = { ...record, sysctls: running?.sysctls ?? readSysctls() };
    updateSlotRecord(record);
    procs.kubelet = startKubelet({
      binary: nodeBinaries.kubelet,
      slot: record,
      dir,
      nodeName,
      kubeconfig: kubeconfigOf(`system:node:${nodeName}`),
      containerd: runtime.paths,
      clusterDns: record.gatewayAddress,
      clientCaFile: kubeletClient.caFile,
      onLine: tails.sink("kubelet"),
    });
    const controllers = startControllers({
      schedulerBinary: nodeBinaries.kubeScheduler,
      controllerManagerBinary: nodeBinaries.kubeControllerManager,
      dir,
      schedulerKubeconfig: kubeconfigOf("system:kube-scheduler"),
      controllerManagerKubeconfig: kubeconfigOf("system:kube-controller-manager"),
      serviceAccountKey: cp.serviceAccountKeyFile,
      rootCaFile: rootCa,
      onLine: (component) => tails.sink(component),
    });
    procs.scheduler = controllers.scheduler;
    procs.controllerManager = controllers.controllerManager;
    procs.kubeProxy = startKubeProxy({
      binary: nodeBinaries.kubeProxy,
      slot: record,
      dir,
      nodeName,
      kubeconfig: kubeconfigOf("system:kube-proxy"),
      onLine: tails.sink("kube-proxy"),
    });
    procs.coredns = startCoreDns({
      binary: nodeBinaries.coredns,
      slot: record,
      dir,
      kubeconfig: kubeconfigOf(COREDNS_USER),
      context: `${CLUSTER_NAME}-${COREDNS_USER.replaceAll(":", "-")}`,
      onLine: tails.sink("coredns"),
    });

    const kc = cp.makeKubeConfig();
    await waitForNodeReady(kc, nodeName, deadline, abortIfExited);
    log(`local node: node ${nodeName} Ready after ${Date.now() - started} ms`);
    await Promise.all([
      waitForServiceAccount(kc, "default", deadline),
      waitForDns(record.gatewayAddress, deadline, abortIfExited),
      waitForKubernetesService(record.netns, cp.caPem, cp.token, deadline, abortIfExited),
    ]);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const error = new Error(
      `local cluster failed to start (timeout ${startTimeoutMs} ms): ${reason}\n${tails.render(30)}${plane === undefined ? "" : `\n${plane.logs(20)}`}`,
    );
    error.cause = err;
    await stop().catch((stopError: unknown) => log(String(stopError)));
    throw error;
  }

  const cp = plane;
  const runtime = containerd;
  if (cp === undefined || runtime === undefined) {
    releaseSlot(record.slot);
    throw new Error("unreachable: control plane or containerd missing after start");
  }
  const startupMs = Date.now() - started;
  log(`local node: cluster ready in ${startupMs} ms; KUBECONFIG=${cp.kubeconfigPath}`);
  const netns = record.netns;
  return {
    controlPlane: cp,
    kubeconfigPath: cp.kubeconfigPath,
    apiserverUrl: cp.server,
    nodeName,
    nodeAddress: record.nodeAddress,
    podCidr: record.podCidr,
    serviceCidr: SERVICE_CIDR,
    dnsAddress: record.gatewayAddress,
    clusterDomain: CLUSTER_DOMAIN,
    netns,
    footprint: record,
    startupMs,
    makeKubeConfig: (user) => cp.makeKubeConfig(user),
    loadImage: (archive) => importImage(runtime.paths, archive),
    run: (command, args) =>
      runCommand("nsenter", [`--net=/run/netns/${netns}`, "--", command, ...args], { timeoutMs: 60_000 }),
    createNamespace: async (prefix = "test") => {
      const kc = cp.makeKubeConfig();
      const name = `${prefix}-${Math.random().toString(16).slice(2, 10)}`;
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
      await waitForServiceAccount(kc, name, deadlineIn(30_000, "createNamespace"));
      return name;
    },
    processes: () => ({ ...procs, ...cp.processes() }),
    logs: (lines = 40) => `${tails.render(lines)}\n${cp.logs(lines)}`,
    stop,
  };
}
