/**
 * `./opstask dev --cluster` as a user runs it: a child process that brings up the lab, prints how to
 * use it, and stays until Ctrl-C. The snapshot command it prints must end Succeeded from the deployed
 * controller (two replicas, one holding the Lease), and SIGINT must stop everything: exit 0 and no
 * network namespace of its node left.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { defaultRepoRoot } from "../../src/devcluster/binaries.ts";
import { controllerPods, leaderPod } from "../../src/devcluster/lab/controller.ts";

const run = promisify(execFile);
const opstask = join(defaultRepoRoot(), "opstask");

/** Resolves with the output so far once `pattern` matches it; rejects when the child exits first. */
const waitForOutput = (child: ChildProcess, output: () => string, pattern: RegExp): Promise<string> =>
  new Promise((resolve, reject) => {
    const check = (): void => {
      if (pattern.test(output())) {
        cleanup();
        resolve(output());
      }
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(
        new Error(`opstask dev --cluster exited (${code}) before ${pattern}:\n${output().slice(-4000)}`),
      );
    };
    const cleanup = (): void => {
      child.stderr?.off("data", check);
      child.off("exit", onExit);
    };
    child.stderr?.on("data", check);
    child.once("exit", onExit);
    check();
  });

const netnsList = async (): Promise<string> => (await run("ip", ["netns", "list"])).stdout;

describe("opstask dev --cluster", () => {
  it(
    "brings up the lab, snapshots its etcd from the deployed controller, and stops on SIGINT",
    async () => {
      let output = "";
      const child = spawn(opstask, ["dev", "--cluster"], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      try {
        const ready = await waitForOutput(child, () => output, /Ctrl-C stops everything\./);
        const kubeconfig = /export KUBECONFIG=(\S+)/.exec(ready)?.[1];
        const netns = /\(netns (\S+)\)/.exec(ready)?.[1];
        const snapshot = /\S+\/opstask (snapshot \S+ -n \S+ --type full --wait)/.exec(ready)?.[1];
        expect(kubeconfig, ready).toBeDefined();
        expect(netns, ready).toMatch(/^opstask-node-/);
        expect(snapshot, ready).toBeDefined();
        if (kubeconfig === undefined || netns === undefined || snapshot === undefined) return;
        expect(await netnsList()).toContain(netns);

        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromFile(kubeconfig);
        const pods = await controllerPods(kubeConfig);
        expect(pods.filter((pod) => pod.status?.containerStatuses?.[0]?.ready === true)).toHaveLength(2);
        expect((await leaderPod(kubeConfig))?.metadata?.name).toBeDefined();

        // The command exactly as printed; exit 0 means the task Succeeded (--wait).
        const args = snapshot.split(" ");
        const taken = await run(opstask, args, {
          env: { ...process.env, KUBECONFIG: kubeconfig },
          timeout: 600_000,
        });
        const namespace = args[args.indexOf("-n") + 1] ?? "";
        // The task's name is its first line (--wait then follows it).
        const name = taken.stdout.split("\n")[0]?.trim() ?? "";
        const task = (await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
          group: "druid.gardener.cloud",
          version: "v1alpha1",
          plural: "etcdopstasks",
          namespace,
          name,
        })) as { status?: { state?: string } };
        expect(task.status?.state, taken.stdout).toBe("Succeeded");

        child.kill("SIGINT");
        expect(await exited, output.slice(-4000)).toBe(0);
        expect(await netnsList()).not.toContain(netns);
      } finally {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGINT");
          await exited;
        }
      }
    },
    40 * 60_000,
  );
});
