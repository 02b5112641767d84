/**
 * One lab per e2e test file (start-lab.ts), started in beforeAll and stopped in afterAll, and the
 * helpers the tests share: running a task to its end, the etcd members' addresses.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll } from "vitest";
import { EtcdName, type Lab, type LabOptions, type StartingLab, startLab } from "./start-lab.ts";

export { EtcdName, type Lab } from "./start-lab.ts";

const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

/** Starts the lab in beforeAll and stops it in afterAll; returns an accessor. */
export const useLab = (options: LabOptions = {}): (() => Lab) => {
  let lab: Lab | undefined;
  let starting: StartingLab | undefined;
  beforeAll(async () => {
    starting = startLab(options);
    lab = await starting.ready;
    process.stderr.write(`lab up (ms): ${JSON.stringify(lab.timings)}\n`);
  }, 30 * 60_000);
  afterAll(async () => {
    await starting?.stop();
  }, 180_000);
  return () => {
    if (lab === undefined) throw new Error("the lab did not start (see beforeAll's error)");
    return lab;
  };
};

export interface TaskState {
  readonly state?: string;
  readonly lastErrors?: ReadonlyArray<{ code?: string; description?: string }>;
  readonly lastOperation?: { description?: string; state?: string };
}

/** Creates an EtcdOpsTask for the lab's Etcd. */
export const createTask = async (
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  config: Record<string, unknown>,
): Promise<void> => {
  await kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...tasks,
    namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: { name, namespace },
      spec: { etcdName: EtcdName, ttlSecondsAfterFinished: 3600, config },
    },
  });
};

/** The task's status now (empty before the controller wrote one). */
export const readTaskStatus = async (
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
): Promise<TaskState> => {
  const task = (await kubeConfig
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...tasks, namespace, name })) as { status?: TaskState };
  return task.status ?? {};
};

export const isFinished = (status: TaskState): boolean =>
  status.state === "Succeeded" || status.state === "Failed" || status.state === "Rejected";

/** Waits until the task is Succeeded, Failed or Rejected; returns its status. */
export const waitForTask = async (
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs = 180_000,
): Promise<TaskState> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await readTaskStatus(kubeConfig, namespace, name);
    if (isFinished(status)) return status;
    if (Date.now() > deadline)
      throw new Error(`${name} not finished after ${timeoutMs} ms: ${JSON.stringify(status)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
};

/** Creates a task and waits for its end. */
export const runTask = async (
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  config: Record<string, unknown>,
  timeoutMs = 180_000,
): Promise<TaskState> => {
  await createTask(kubeConfig, namespace, name, config);
  return waitForTask(kubeConfig, namespace, name, timeoutMs);
};

/** The pod IP of each etcd member, by pod name. */
export const memberAddresses = async (
  kubeConfig: KubeConfig,
  namespace: string,
): Promise<Map<string, string>> => {
  const pods = await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
    namespace,
    labelSelector: `app.kubernetes.io/part-of=${EtcdName}`,
  });
  return new Map(pods.items.map((pod) => [pod.metadata?.name ?? "", pod.status?.podIP ?? ""]));
};
