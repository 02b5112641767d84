/**
 * The local cluster with a real node (src/devcluster/node): pods run from locally loaded images,
 * controllers work (Deployment, Job), cluster DNS and Services work from pods, a pod's ServiceAccount
 * token reaches the kube-apiserver through the `kubernetes` Service, and stop() leaves nothing of the
 * node on the host. Needs root and scripts/system-deps node (scripts/test installs it).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { AppsV1Api, BatchV1Api, CoreV1Api, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { cgroupProcesses } from "../../src/devcluster/node/cgroups.ts";
import { readSysctls } from "../../src/devcluster/node/host-sysctls.ts";
import { mountsUnder } from "../../src/devcluster/node/mounts.ts";
import { isMountPoint, readSlotRecords } from "../../src/devcluster/node/node-slot.ts";
import { useLocalCluster } from "../support/local-cluster.ts";
import { waitFor } from "../support/wait.ts";

/** iptables and ip6tables rules of the host, without counters. */
const hostRules = (): Set<string> =>
  new Set(
    ["iptables-save", "ip6tables-save"].flatMap((command) =>
      execFileSync(command, { encoding: "utf8" })
        .split("\n")
        .filter((line) => line !== "" && !line.startsWith("#"))
        .map((line) => line.replace(/\[\d+:\d+\]/g, "")),
    ),
  );

// Host-wide state other nodes share (sysctls the kubelet changes, the /run/netns mount) is restored by
// the last node to stop, from the values the first one recorded.
const nodesBefore = readSlotRecords().length;
const sysctlsBefore = readSysctls();
const forwardingBefore = readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8");
const netnsMountedBefore = isMountPoint("/run/netns");
let rulesBefore = new Set<string>();
beforeAll(() => {
  rulesBefore = hostRules();
});
const local = useLocalCluster();

const podPhase = async (core: CoreV1Api, namespace: string, name: string): Promise<V1Pod | undefined> => {
  const pod = await core.readNamespacedPod({ namespace, name });
  const phase = pod.status?.phase;
  if (phase === "Failed") throw new Error(`pod ${namespace}/${name} failed: ${JSON.stringify(pod.status)}`);
  return phase === "Succeeded" ? pod : undefined;
};

/** Runs a pod to completion and returns its log. */
const runPod = async (
  kc: KubeConfig,
  namespace: string,
  name: string,
  spec: { image: string; command?: string[]; args?: string[] },
): Promise<string> => {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        restartPolicy: "Never",
        enableServiceLinks: false,
        containers: [{ name: "main", imagePullPolicy: "Never", ...spec }],
      },
    },
  });
  try {
    await waitFor(`pod ${name} Succeeded`, () => podPhase(core, namespace, name), 60_000, 250);
  } catch (err) {
    const log = await core.readNamespacedPodLog({ namespace, name, container: "main" }).catch(String);
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nlog: ${log}`);
  }
  // Through the kube-apiserver, which asks the kubelet (at the node's InternalIP).
  return core.readNamespacedPodLog({ namespace, name, container: "main" });
};

describe("local cluster with a real node", () => {
  it("is ready: the node is Ready and reports the node's address", async () => {
    const { cluster } = local();
    const node = await cluster.makeKubeConfig().makeApiClient(CoreV1Api).readNode({ name: cluster.nodeName });
    expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status).toBe("True");
    expect(node.status?.addresses).toContainEqual({ type: "InternalIP", address: cluster.nodeAddress });
    expect(cluster.nodeAddress).toMatch(/^198\.18\./);
    expect(cluster.apiserverUrl).toMatch(/^https:\/\/198\.18\.255\.\d+:\d+$/);
  });

  it("runs a pod from a loaded image and reads its log through the kubelet", async () => {
    const { cluster, images } = local();
    const kc = cluster.makeKubeConfig();
    const namespace = await cluster.createNamespace("pod");
    const log = await runPod(kc, namespace, "hello", {
      image: images.busybox.ref,
      command: ["sh", "-c", "echo hello from $(hostname)"],
    });
    expect(log.trim()).toBe("hello from hello");
    const pod = await kc.makeApiClient(CoreV1Api).readNamespacedPod({ namespace, name: "hello" });
    expect(pod.status?.podIP).toMatch(new RegExp(`^198\\.18\\.${cluster.footprint.slot}\\.`));
  });

  it("makes a Deployment of 2 available, a Service resolvable by DNS and reachable from a pod", async () => {
    const { cluster, images } = local();
    const kc = cluster.makeKubeConfig();
    const namespace = await cluster.createNamespace("web");
    const labels = { app: "web" };
    await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              enableServiceLinks: false,
              containers: [
                {
                  name: "httpd",
                  image: images.busybox.ref,
                  imagePullPolicy: "Never",
                  command: [
                    "sh",
                    "-c",
                    "mkdir -p /tmp/www && echo served-by-$(hostname) > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www",
                  ],
                  ports: [{ containerPort: 8080 }],
                  readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1 },
                },
              ],
            },
          },
        },
      },
    });
    await kc.makeApiClient(CoreV1Api).createNamespacedService({
      namespace,
      body: {
        metadata: { name: "web" },
        spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
      },
    });
    const apps = kc.makeApiClient(AppsV1Api);
    await waitFor(
      "Deployment web 2/2 available",
      async () =>
        (await apps.readNamespacedDeployment({ namespace, name: "web" })).status?.availableReplicas === 2
          ? true
          : undefined,
      90_000,
      250,
    );

    const log = await runPod(kc, namespace, "client", {
      image: images.busybox.ref,
      command: [
        "sh",
        "-c",
        `nslookup web.${namespace}.svc.cluster.local && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 web 80`,
      ],
    });
    const service = await kc.makeApiClient(CoreV1Api).readNamespacedService({ namespace, name: "web" });
    expect(service.spec?.clusterIP).toMatch(/^198\.19\.0\./);
    expect(log).toContain(service.spec?.clusterIP);
    expect(log).toMatch(/served-by-web-/);
  }, 150_000);

  it("runs a Job to completion", async () => {
    const { cluster, images } = local();
    const kc = cluster.makeKubeConfig();
    const namespace = await cluster.createNamespace("job");
    const batch = kc.makeApiClient(BatchV1Api);
    await batch.createNamespacedJob({
      namespace,
      body: {
        metadata: { name: "count" },
        spec: {
          completions: 2,
          parallelism: 2,
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: "Never",
              enableServiceLinks: false,
              containers: [
                {
                  name: "main",
                  image: images.busybox.ref,
                  imagePullPolicy: "Never",
                  command: ["sh", "-c", "echo job-ok"],
                },
              ],
            },
          },
        },
      },
    });
    const job = await waitFor(
      "Job count complete",
      async () => {
        const current = await batch.readNamespacedJob({ namespace, name: "count" });
        if (current.status?.conditions?.some((c) => c.type === "Failed" && c.status === "True"))
          throw new Error(`Job failed: ${JSON.stringify(current.status)}`);
        return current.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True")
          ? current
          : undefined;
      },
      90_000,
      250,
    );
    expect(job.status?.succeeded).toBe(2);
  }, 120_000);

  it("gives a pod its ServiceAccount token, which reaches the kube-apiserver through the kubernetes Service", async () => {
    const { cluster, images } = local();
    const kc = cluster.makeKubeConfig();
    const namespace = await cluster.createNamespace("sa");
    // kubectl in the pod finds the apiserver as every in-cluster client does: KUBERNETES_SERVICE_HOST
    // (198.19.0.1), the token and CA mounted from the ServiceAccount.
    const log = await runPod(kc, namespace, "whoami", {
      image: images.kubectl.ref,
      args: ["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
    });
    expect(log.trim()).toBe(`system:serviceaccount:${namespace}:default`);
  }, 90_000);

  it("stop() stops every process and removes every trace of the node from the host", async () => {
    const { cluster } = local();
    const { footprint } = cluster;
    const pids = Object.values(cluster.processes()).map((p) => p.pid);
    expect(pids.length).toBeGreaterThanOrEqual(8);
    await cluster.stop();

    const alive = pids.filter((pid) => existsSync(`/proc/${pid}`));
    expect(alive).toEqual([]);
    expect(cgroupProcesses(footprint.cgroupName)).toEqual([]);
    expect(
      readdirSync("/sys/fs/cgroup").filter((h) => existsSync(`/sys/fs/cgroup/${h}/${footprint.cgroupName}`)),
    ).toEqual([]);
    expect(existsSync(`/run/netns/${footprint.netns}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${footprint.hostInterface}`)).toBe(false);
    const routes = execFileSync("ip", ["route", "show", "table", "all"], { encoding: "utf8" });
    expect(routes).not.toContain(footprint.podCidr);
    expect(routes).not.toMatch(new RegExp(`metric ${footprint.blackholeMetric}\\b`));
    const added = [...hostRules()].filter((rule) => !rulesBefore.has(rule));
    expect(added.filter((rule) => /KUBE-|198\.1[89]\.|otn\d/.test(rule))).toEqual([]);
    expect(mountsUnder(footprint.dir)).toEqual([]);
    expect(existsSync(footprint.dir)).toBe(false);
    const lastNode = readSlotRecords().length === 0;
    if (nodesBefore === 0) expect(footprint.sysctls).toEqual(sysctlsBefore);
    if (lastNode) expect(readSysctls()).toEqual(footprint.sysctls);
    const links = existsSync("/var/log/containers")
      ? readdirSync("/var/log/containers").filter((name) =>
          readlinkSync(`/var/log/containers/${name}`).startsWith(footprint.dir),
        )
      : [];
    expect(links).toEqual([]);
    expect(existsSync(`/run/opstask-node/slot-${footprint.slot}.json`)).toBe(false);
    expect(readFileSync("/proc/sys/net/ipv4/ip_forward", "utf8")).toBe(forwardingBefore);
    // `ip netns add` makes /run/netns a mount point; the last node to stop undoes that.
    if (lastNode && nodesBefore === 0) expect(isMountPoint("/run/netns")).toBe(netnsMountedBefore);
  }, 120_000);
});
