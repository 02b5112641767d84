/**
 * What the controller serves at /metrics, read from the registry its own constructors build (the same
 * calls as `runTaskController` with metrics, history and a phase deadline on): every sample name with
 * the labels it can carry. A rule or dashboard may name nothing else.
 */
import type { Registry } from "prom-client";
import { makeHistoryMetrics } from "../../src/history/history-metrics.ts";
import { makePhaseAges, registerPhaseAgeMetrics } from "../../src/history/phase-ages.ts";
import { FaultCounter } from "../../src/interpreters/kubernetes/fault-counter.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";
import { sumQueueMetrics } from "../../src/runtime/work-queue.ts";

/** Labels Prometheus adds to every series it scrapes. */
export const targetLabels = ["job", "instance"] as const;

export const exportedMetrics = async (): Promise<ReadonlyMap<string, ReadonlySet<string>>> => {
  const metrics = makeControllerMetrics("opstask_", { groupLabel: "etcd" });
  metrics.attach({
    queue: () => sumQueueMetrics([]),
    handlerCallsInFlight: () => 0,
    requests: new RequestCounter(),
    leader: () => true,
    faults: new FaultCounter(),
    apiLostSeconds: () => 0,
  });
  const registry: Registry = metrics.registry;
  // `opstask controller` passes `atRest` (a hibernated Etcd), which adds opstask_target_at_rest.
  makeHistoryMetrics(
    registry,
    "EtcdOpsTask",
    () => 0,
    "opstask_",
    () => false,
  );
  registerPhaseAgeMetrics(registry, "EtcdOpsTask", makePhaseAges(), 600_000);
  const exported = new Map<string, Set<string>>();
  const add = (name: string, labels: ReadonlyArray<string>) =>
    exported.set(name, new Set([...(exported.get(name) ?? []), ...labels, ...targetLabels]));
  for (const metric of registry.getMetricsAsArray()) {
    // prom-client's metric objects carry their name, type and label names (its typings show less).
    const { name, type, labelNames } = metric as unknown as {
      name: string;
      type: string;
      labelNames?: ReadonlyArray<string>;
    };
    const labels = labelNames ?? [];
    if (type === "histogram") {
      add(`${name}_bucket`, [...labels, "le"]);
      add(`${name}_sum`, labels);
      add(`${name}_count`, labels);
    } else if (type === "summary") {
      add(name, [...labels, "quantile"]);
      add(`${name}_sum`, labels);
      add(`${name}_count`, labels);
    } else add(name, labels);
  }
  return exported;
};
