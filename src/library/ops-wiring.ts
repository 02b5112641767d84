/**
 * The operational endpoints of `runTaskController`, the same parts `opstask controller` serves:
 * Prometheus metrics (`makeControllerMetrics`, with the admission group's label named by the kind)
 * on their own listener (authenticated by TokenReview and SubjectAccessReview when `secure`), and
 * `/healthz` and `/readyz` (caches synced, leading or a healthy standby, API server answering).
 */
import type { AddressInfo, Server } from "node:net";
import type { FaultCounter } from "../interpreters/kubernetes/fault-counter.ts";
import type { KubeClient } from "../kube/kube-client.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import { ContactCounter } from "../runtime/api-contact.ts";
import {
  type ControllerMetrics,
  type ControllerObserver,
  makeControllerMetrics,
} from "../runtime/metrics.ts";
import { startMetricsServer } from "../runtime/metrics-server.ts";
import { startOpsServer } from "../runtime/ops-server.ts";
import { notReadyReason } from "../runtime/readiness.ts";
import type { WorkQueueMetrics } from "../runtime/work-queue.ts";

export interface MetricsEndpoint {
  /** `HOST:PORT` (`127.0.0.1:8080`; `:0` picks a free port on every interface: prefer a host). */
  readonly address: string;
  /**
   * HTTPS with a bearer token checked by TokenReview and a SubjectAccessReview of `get` on the
   * `/metrics` non-resource URL (controller-runtime's secure serving); default true. Plain HTTP only
   * on loopback or behind something that authenticates.
   */
  readonly secure?: boolean;
  /** PEM files of the serving certificate; both or neither (then a self-signed one is made). */
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface OpsState {
  readonly leading: () => boolean;
  readonly synced: () => boolean;
  readonly caches: number;
  readonly queue: () => WorkQueueMetrics;
  readonly inFlightCalls: () => number;
}

export interface OpsWiringOptions {
  readonly metrics?: MetricsEndpoint;
  readonly probes?: string;
  readonly groupLabel: string;
  readonly client: KubeClient;
  readonly counter: RequestCounter;
  readonly faults?: FaultCounter;
  readonly state: OpsState;
}

export interface OpsWiring {
  /** The metrics' observer, when metrics are served. */
  readonly metrics?: ControllerMetrics;
  readonly metricsUrl?: string;
  readonly probesUrl?: string;
  readonly close: () => Promise<void>;
}

const urlOf = (server: Server | undefined, scheme: string): string | undefined => {
  const address = server?.address();
  if (address === null || address === undefined || typeof address === "string") return undefined;
  const { address: host, port } = address as AddressInfo;
  return `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`;
};

export const startOpsWiring = async (options: OpsWiringOptions): Promise<OpsWiring> => {
  const { counter, state } = options;
  const servers: Server[] = [];
  const close = () =>
    Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))).then(
      () => undefined,
    );
  try {
    let metrics: ControllerMetrics | undefined;
    let metricsUrl: string | undefined;
    if (options.metrics !== undefined) {
      metrics = makeControllerMetrics("opstask_", { groupLabel: options.groupLabel });
      metrics.attach({
        queue: state.queue,
        handlerCallsInFlight: state.inFlightCalls,
        requests: counter,
        leader: state.leading,
        ...(options.faults === undefined ? {} : { faults: options.faults }),
        ...(counter instanceof ContactCounter ? { apiLostSeconds: () => counter.lostForMs() / 1000 } : {}),
      });
      const secure = options.metrics.secure ?? true;
      const server = await startMetricsServer({
        address: options.metrics.address,
        secure,
        certFile: options.metrics.certFile ?? "",
        keyFile: options.metrics.keyFile ?? "",
        registry: metrics.registry,
        client: options.client,
        counter,
      });
      if (server !== undefined) servers.push(server);
      metricsUrl = urlOf(server, secure ? "https" : "http");
    }
    let probesUrl: string | undefined;
    if (options.probes !== undefined) {
      const server = await startOpsServer(options.probes, {
        notReady: () =>
          notReadyReason({
            leading: state.leading(),
            synced: state.synced() ? state.caches : 0,
            caches: state.caches,
            apiLostForMs: counter instanceof ContactCounter ? counter.lostForMs() : 0,
          }),
      });
      if (server !== undefined) servers.push(server);
      probesUrl = urlOf(server, "http");
    }
    return {
      ...(metrics === undefined ? {} : { metrics }),
      ...(metricsUrl === undefined ? {} : { metricsUrl }),
      ...(probesUrl === undefined ? {} : { probesUrl }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
};

/** An observer that tells both: every report goes to `first`, then to `second`. */
export const bothObservers = (first: ControllerObserver, second: ControllerObserver): ControllerObserver => ({
  passEnded: (result, seconds) => {
    first.passEnded(result, seconds);
    second.passEnded(result, seconds);
  },
  taskFinished: (labels, seconds, uid, errorCode) => {
    first.taskFinished(labels, seconds, uid, errorCode);
    second.taskFinished(labels, seconds, uid, errorCode);
  },
  taskGone: (uid) => {
    first.taskGone?.(uid);
    second.taskGone?.(uid);
  },
  groupGone: (namespace, name) => {
    first.groupGone?.(namespace, name);
    second.groupGone?.(namespace, name);
  },
  passTransitions: (task, pass) => {
    first.passTransitions?.(task, pass);
    second.passTransitions?.(task, pass);
  },
  foreignWrite: (manager, field, uid) => {
    first.foreignWrite?.(manager, field, uid);
    second.foreignWrite?.(manager, field, uid);
  },
  handlerDefect: (phase) => {
    first.handlerDefect?.(phase);
    second.handlerDefect?.(phase);
  },
});
