/**
 * Tasks as large as a task author can make them, for the oversized-task test and the memory benchmark:
 * the bulk in a 250 KB annotation (what the controller's cache drops) and in a spec string the CRD does
 * not bound (the compaction image, which the cache keeps), and how to read their states without reading
 * them (hundreds of MB).
 */
import { request } from "node:https";
import type { CustomObjectsApi } from "@kubernetes/client-node";
import type { ControlPlane } from "../../src/devcluster/control-plane.ts";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import { machineVersion } from "../../src/machine/task-events.ts";
import { machineVersionAnnotation } from "../../src/reconcile/task-kind.ts";

export const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" } as const;

/**
 * A task of about `bytes` of JSON as sent (at least ~300: the shell alone). `claimed`: it carries the
 * controller's finalizer and machine version already, as the controller's first write would put them
 * (an author may write both), so that the controller's pass has one write to make, not two.
 */
export const bulkyTask = (namespace: string, name: string, bytes: number, claimed = false) => {
  const annotation = "a".repeat(Math.max(0, Math.min(250_000, bytes - 100_000)));
  const shell = {
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "EtcdOpsTask",
    metadata: {
      name,
      namespace,
      labels: { bulk: "l".repeat(63) },
      ...(claimed ? { finalizers: [Finalizer] } : {}),
      annotations: {
        ...(annotation === "" ? {} : { "example.com/bulk": annotation }),
        ...(claimed ? { [machineVersionAnnotation]: String(machineVersion) } : {}),
      },
    },
    // An Etcd of its own: tasks of one Etcd are admitted one at a time.
    spec: { etcdName: `etcd-${name}`, config: { onDemandSnapshotCompaction: { image: "" } } },
  };
  const image = "i".repeat(Math.max(1, bytes - JSON.stringify(shell).length));
  return { ...shell, spec: { ...shell.spec, config: { onDemandSnapshotCompaction: { image } } } };
};

/**
 * The largest task the apiserver stores (etcd's request limit, 1.5 MiB by default), in bytes of the
 * JSON sent, to within `step`: creates `<name>` at decreasing sizes from above the limit until one is
 * stored (it stays). Returns that size and the smallest refused one.
 */
export const createLargestTask = async (
  api: CustomObjectsApi,
  namespace: string,
  name: string,
  step = 4_096,
): Promise<{ readonly stored: number; readonly refused: number }> => {
  let refused = 0;
  for (let bytes = 1_600_000; bytes > 0; bytes -= step) {
    const stored = await api
      .createNamespacedCustomObject({ ...tasks, namespace, body: bulkyTask(namespace, name, bytes) })
      .then(
        () => true,
        (error: unknown) => {
          if (!/too large/i.test(String((error as { body?: unknown }).body ?? error))) throw error;
          return false;
        },
      );
    if (stored) return { stored: bytes, refused };
    refused = bytes;
  }
  throw new Error("no task size was stored");
};

/**
 * Every task's state (`.status.state`, "" when none) by name: the apiserver's table of the tasks (their
 * printer columns, no objects), a few KB however large the tasks are.
 */
export const taskStates = (plane: ControlPlane, namespace: string): Promise<Map<string, string>> => {
  const url = new URL(
    `/apis/${tasks.group}/${tasks.version}/namespaces/${namespace}/${tasks.plural}?includeObject=None`,
    plane.server,
  );
  return new Promise((resolve, reject) => {
    const outgoing = request(url, {
      ca: plane.caPem,
      headers: {
        Accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
        Authorization: `Bearer ${plane.token}`,
      },
    });
    outgoing.once("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("end", () => {
        try {
          if (response.statusCode !== 200)
            throw new Error(
              `table of tasks: HTTP ${response.statusCode}: ${Buffer.concat(chunks).toString()}`,
            );
          const table = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
            columnDefinitions: Array<{ name: string }>;
            rows: Array<{ cells: unknown[] }>;
          };
          const state = table.columnDefinitions.findIndex((column) => column.name === "State");
          resolve(new Map(table.rows.map((row) => [String(row.cells[0]), String(row.cells[state] ?? "")])));
        } catch (error) {
          reject(error);
        }
      });
    });
    outgoing.once("error", reject);
    outgoing.setTimeout(30_000, () => outgoing.destroy(new Error("table of tasks: no answer in 30 s")));
    outgoing.end();
  });
};
