/**
 * A local node on a machine other users share. The kubelet's API is reachable from the host at the
 * node's address, so by every local user: it must refuse an anonymous request (pod logs, the host's
 * /var/log, exec as root) and ask the apiserver about a token it accepts, while the apiserver's own
 * kubelet client (kubectl logs, kubectl exec) works as before. And the node's teardown leaves no
 * CNI result of its pods in /var/lib/cni. Needs root and scripts/system-deps node.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { CoreV1Api } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { useLocalCluster } from "../support/local-cluster.ts";
import { waitFor } from "../support/wait.ts";

const local = useLocalCluster();

/** The status of a request to the kubelet's API from the host (its serving certificate is self-signed). */
const kubeletStatus = (url: string, method: "GET" | "POST", token?: string) =>
  new Promise<number>((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        rejectUnauthorized: false,
        timeout: 10_000,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on("error", reject);
    req.end();
  });

const run = promisify(execFile);

/** A busybox pod that logs a line and sleeps; resolves once it runs. */
const startSleeper = async (namespace: string, name: string): Promise<string> => {
  const { cluster, images } = local();
  const core = cluster.makeKubeConfig().makeApiClient(CoreV1Api);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        enableServiceLinks: false,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "main",
            image: images.busybox.ref,
            imagePullPolicy: "Never",
            command: ["sh", "-c", "echo started; exec sleep 3600"],
          },
        ],
      },
    },
  });
  return waitFor(
    `pod ${name} Running`,
    async () => {
      const pod = await core.readNamespacedPod({ namespace, name });
      return pod.status?.phase === "Running" && pod.status.podIP !== undefined ? pod.status.podIP : undefined;
    },
    60_000,
    250,
  );
};

const CniResults = "/var/lib/cni/results";

interface CachedResult {
  readonly containerId?: string;
  readonly result?: { readonly ips?: ReadonlyArray<{ readonly address?: string }> };
}

const readCached = (name: string): CachedResult => {
  try {
    return JSON.parse(readFileSync(join(CniResults, name), "utf8")) as CachedResult;
  } catch {
    return {}; // another node's, being written or removed right now
  }
};

const modifiedAt = (name: string): number => {
  try {
    return statSync(join(CniResults, name)).mtimeMs;
  } catch {
    return 0;
  }
};

/**
 * The cached CNI results of the sandbox that was given `podIp`: its own file and its loopback's. Pods
 * of earlier nodes had the same addresses, and a node killed with its pods (another test's, or a run
 * stopped by hand) leaves its files behind: the newest file with the address is this pod's.
 */
const cniResultsOf = (podIp: string): string[] => {
  if (!existsSync(CniResults)) return [];
  const names = readdirSync(CniResults);
  const sandbox = names
    .filter((name) => readCached(name).result?.ips?.some((ip) => ip.address?.startsWith(`${podIp}/`)))
    .sort((a, b) => modifiedAt(b) - modifiedAt(a))
    .map((name) => readCached(name).containerId)[0];
  return sandbox === undefined ? [] : names.filter((name) => name.includes(`-${sandbox}-`));
};

describe("a local node on a shared machine", () => {
  it("the kubelet refuses anonymous requests and asks the apiserver about tokens; kubectl logs and exec work", async () => {
    const { cluster, binaries } = local();
    const namespace = await cluster.createNamespace("kubelet-auth");
    await startSleeper(namespace, "sleeper");
    const kubelet = `https://${cluster.nodeAddress}:10250`;

    // Another local user, without credentials: every pod's log, the host's /var/log, a command as root.
    expect(await kubeletStatus(`${kubelet}/pods`, "GET")).toBe(401);
    expect(await kubeletStatus(`${kubelet}/logs/`, "GET")).toBe(401);
    expect(await kubeletStatus(`${kubelet}/containerLogs/${namespace}/sleeper/main`, "GET")).toBe(401);
    expect(await kubeletStatus(`${kubelet}/run/${namespace}/sleeper/main?cmd=id`, "POST")).toBe(401);
    // A token the apiserver accepts, of a user RBAC grants nothing of the kubelet's API.
    const proxyToken = cluster.controlPlane.tokenFor("system:kube-proxy");
    expect(await kubeletStatus(`${kubelet}/logs/`, "GET", proxyToken)).toBe(403);
    expect(await kubeletStatus(`${kubelet}/run/${namespace}/sleeper/main?cmd=id`, "POST", proxyToken)).toBe(
      403,
    );

    // The apiserver's own client (its certificate, and RBAC's system:kubelet-api-admin).
    const kubectl = (...args: string[]) =>
      run(binaries.kubectl, ["--kubeconfig", cluster.kubeconfigPath, "-n", namespace, ...args], {
        timeout: 30_000,
      });
    expect((await kubectl("logs", "sleeper")).stdout.trim()).toBe("started");
    expect((await kubectl("exec", "sleeper", "--", "echo", "exec works")).stdout.trim()).toBe("exec works");
  }, 120_000);

  it("its teardown removes the CNI results of its pods from /var/lib/cni", async () => {
    const { cluster } = local();
    const namespace = await cluster.createNamespace("cni");
    const podIp = await startSleeper(namespace, "cached");
    // The pod's interface and its loopback.
    const cached = cniResultsOf(podIp);
    expect(cached).toHaveLength(2);

    await cluster.stop();
    expect(cached.filter((name) => existsSync(join(CniResults, name)))).toEqual([]);
  }, 120_000);
});
