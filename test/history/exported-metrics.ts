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

/** Labels Prometheus adds to every series it scrapes. */
export const targetLabels = ["job", "instance"] as const;

export const exportedMetrics = async (): Promise<ReadonlyMap<string, ReadonlySet<string>>> => {
  const metrics = makeControllerMetrics("opstask_", { groupLabel: "etcd" });
  metrics.attach({
    queue: () => ({ depth: 0, inFlight: 0, delayed: 0, adds: 0, waitMaxMs: 0 }),
    handlerCallsInFlight: () => 0,
    requests: new RequestCounter(),
    leader: () => true,
    faults: new FaultCounter(),
    apiLostSeconds: () => 0,
  });
  const registry: Registry = metrics.registry;
  makeHistoryMetrics(registry, "EtcdOpsTask", () => 0);
  registerPhaseAgeMetrics(registry, "EtcdOpsTask", makePhaseAges(), 600_000);
  const exported = new Map<string, Set<string>>();
  const add = (name: string, labels: ReadonlyArray<string>) =>
    exported.set(name, new Set([...(exported.get(name) ?? []), ...labels, ...targetLabels]));
  for (const metric of registry.getMetricsAsArray()) {
    const { name, type } = (await metric.get()) as { name: string; type: string };
    const labels = (metric as unknown as { labelNames?: ReadonlyArray<string> }).labelNames ?? [];
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
