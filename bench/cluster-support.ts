/**
 * Helpers of bench/cluster.ts: the controller in a child process, a watch of the benchmark's own that
 * times every task, a paced creator, and small figures helpers.
 */

import { type ChildProcess, fork } from "node:child_process";
import {
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  type RequestContext,
  setHeaderOptions,
  Watch,
} from "@kubernetes/client-node";
import type { RequestCount } from "../src/kube/request-metrics.ts";
import { asChildMessage, type ChildMessage, type ParentMessage, type Sample } from "./cluster-protocol.ts";
import { deployedEnv } from "./deployed-process.ts";

export const taskResource = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until true; false when `timeoutMs` passed first. */
export const waitUntil = async (probe: () => boolean, timeoutMs: number, everyMs = 100): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (probe()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
};

const withTimeout = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });

/**
 * Makes every request of `kubeConfig`'s clients share one connection pool. client-node 2.0.1's
 * `KubeConfig.applySecurityAuthentication` (dist/config.js, `createDispatcher`) builds a new undici
 * Agent for every request: one TLS handshake per request, and the idle keep-alive connections of all
 * those agents stay open. This keeps the first Agent and hands it to every later request.
 */
export const reuseConnections = (kubeConfig: KubeConfig): void => {
  const original = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  let shared: ReturnType<RequestContext["getDispatcher"]>;
  kubeConfig.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    await original(context);
    const dispatcher = context.getDispatcher();
    if (dispatcher === undefined) return;
    shared ??= dispatcher;
    context.setDispatcher(shared);
  };
};

// ---- the controller in a child process -----------------------------------------------------------

export class ControllerProcess {
  readonly #child: ChildProcess;
  readonly #waiting = new Set<(message: ChildMessage) => boolean>();
  #serial = 0;
  #exited = false;
  /** The first sample, before the controller started (the bare process with everything imported). */
  readonly loaded: Promise<Sample>;

  /** NODE_OPTIONS of the process. */
  readonly nodeOptions: string;

  /** `nodeOptions`: instead of the Deployment's NODE_OPTIONS. */
  /** `entry`: the bundled bench/cluster-controller.ts (`bundleControllerEntry`). */
  constructor(
    entry: string,
    kubeconfigPath: string,
    namespace: string,
    concurrency: number,
    nodeOptions?: string,
  ) {
    const env = {
      ...process.env,
      ...deployedEnv(),
      ...(nodeOptions === undefined ? {} : { NODE_OPTIONS: nodeOptions }),
    };
    this.nodeOptions = env.NODE_OPTIONS ?? "";
    this.#child = fork(entry, [kubeconfigPath, namespace, String(concurrency)], {
      // Node flags and environment as deploy/deployment.yaml sets them (NODE_OPTIONS …), plus
      // --expose-gc for the after-GC sample and OPSTASK_BENCH_CHILD_NODE_ARGS (e.g. --cpu-prof).
      execArgv: [
        "--expose-gc",
        ...(process.env.OPSTASK_BENCH_CHILD_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== ""),
      ],
      env,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.#child.on("message", (raw: unknown) => {
      const message = asChildMessage(raw);
      if (message === undefined) return;
      if (message.type === "error") process.stderr.write(`controller process: ${message.message}\n`);
      for (const waiter of [...this.#waiting]) if (waiter(message)) this.#waiting.delete(waiter);
    });
    this.#child.on("exit", () => {
      this.#exited = true;
    });
    this.loaded = this.#next((m) => (m.type === "loaded" ? m.sample : undefined), 30_000, "child loaded");
  }

  #next<A>(pick: (message: ChildMessage) => A | undefined, ms: number, what: string): Promise<A> {
    return withTimeout(
      new Promise<A>((resolve, reject) => {
        this.#waiting.add((message) => {
          if (message.type === "error") {
            reject(new Error(message.message));
            return true;
          }
          const value = pick(message);
          if (value === undefined) return false;
          resolve(value);
          return true;
        });
      }),
      ms,
      what,
    );
  }

  #send(message: ParentMessage): void {
    this.#child.send(message);
  }

  /** Starts the controller; resolves with the time to its first synced LIST. */
  start(): Promise<number> {
    const started = this.#next((m) => (m.type === "started" ? m.startMs : undefined), 60_000, "start");
    this.#send({ type: "start" });
    return started;
  }

  sample(gc = false): Promise<Sample> {
    this.#serial += 1;
    const id = this.#serial;
    const answer = this.#next(
      (m) => (m.type === "sample" && m.id === id ? m.sample : undefined),
      30_000,
      "sample",
    );
    this.#send({ type: "sample", id, gc });
    return answer;
  }

  /** Stops the controller gracefully (bounded), then makes sure the process is gone. */
  async stop(): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#child.once("exit", () => resolve()));
    try {
      if (this.#child.connected) {
        const stopped = this.#next((m) => (m.type === "stopped" ? true : undefined), 40_000, "stop");
        this.#send({ type: "stop" });
        await stopped;
      }
      await withTimeout(exited, 5_000, "child exit");
    } catch (err) {
      process.stderr.write(`controller process did not stop cleanly (${String(err)}); killing it\n`);
      this.#child.kill("SIGKILL");
      await withTimeout(exited, 5_000, "child exit after SIGKILL").catch(() => undefined);
    }
  }
}

/**
 * Waits until the controller is quiet: no request and no pass for `quietMs` (bounded by `timeoutMs`).
 * Returns the last sample and whether it settled.
 */
export const settle = async (
  controller: ControllerProcess,
  quietMs = 2_000,
  timeoutMs = 60_000,
): Promise<{ sample: Sample; settled: boolean }> => {
  const deadline = Date.now() + timeoutMs;
  const signature = (s: Sample) =>
    `${totalRequests(s.requests)}/${s.controller?.passes ?? 0}/${s.controller?.inFlightCalls ?? 0}`;
  let last = await controller.sample();
  let quietSince = Date.now();
  for (;;) {
    await sleep(250);
    const next = await controller.sample();
    if (signature(next) !== signature(last)) quietSince = Date.now();
    last = next;
    if (Date.now() - quietSince >= quietMs) return { sample: last, settled: true };
    if (Date.now() > deadline) return { sample: last, settled: false };
  }
};

// ---- request counts ------------------------------------------------------------------------------

export const totalRequests = (requests: ReadonlyArray<RequestCount>): number =>
  requests.reduce((sum, r) => sum + r.count, 0);

/** `after - before`, by "verb code", zero entries left out. */
export const requestDiff = (
  before: ReadonlyArray<RequestCount>,
  after: ReadonlyArray<RequestCount>,
): Map<string, number> => {
  const diff = new Map<string, number>();
  for (const r of after) diff.set(`${r.verb} ${r.code}`, r.count);
  for (const r of before) diff.set(`${r.verb} ${r.code}`, (diff.get(`${r.verb} ${r.code}`) ?? 0) - r.count);
  for (const [key, count] of diff) if (count === 0) diff.delete(key);
  return new Map([...diff].sort(([a], [b]) => a.localeCompare(b)));
};

export const byVerb = (diff: Map<string, number>, verb: string): number => {
  let total = 0;
  for (const [key, count] of diff) if (key.startsWith(`${verb} `)) total += count;
  return total;
};

// ---- the benchmark's own view of the tasks ---------------------------------------------------------

export interface TaskTimes {
  /** When the create request was sent (performance.now() ms). */
  sentAt?: number;
  /** When the create response arrived. */
  createdAt?: number;
  createFailures: number;
  /** The first watch event that showed state Succeeded. */
  succeededAt?: number;
  /** The DELETED watch event. */
  goneAt?: number;
  lastState?: string;
  finalizers?: number;
  /** The last watch events ("TYPE rv state fin=n [deleting] @ms", Date.now() modulo 10⁶ as in the child's traces). */
  events: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null;

/**
 * A watch of one namespace's tasks from the benchmark's own client, restarted from the last
 * resourceVersion if the server or client-node ends it. Records when each task turned Succeeded and
 * when it was deleted.
 */
export class TaskWatch {
  readonly tasks = new Map<string, TaskTimes>();
  readonly #watch: Watch;
  readonly #path: string;
  #resourceVersion = "";
  #abort: AbortController | undefined;
  #closed = false;
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  restarts = 0;
  events = 0;

  /** Create → Succeeded, ms ascending, of those of `names` that Succeeded; `last`: when the last did (≥ since). */
  succeededSince(
    names: Iterable<string>,
    since: number,
  ): { readonly latencies: number[]; readonly last: number } {
    const latencies: number[] = [];
    let last = since;
    for (const name of names) {
      const times = this.tasks.get(name);
      if (times?.succeededAt === undefined || times.sentAt === undefined) continue;
      latencies.push(times.succeededAt - times.sentAt);
      last = Math.max(last, times.succeededAt);
    }
    latencies.sort((a, b) => a - b);
    return { latencies, last };
  }

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.kubeConfig = kubeConfig;
    this.namespace = namespace;
    this.#watch = new Watch(kubeConfig);
    // client-node aborts a watch after 30 s without data; the idle phase is longer than that.
    Reflect.set(this.#watch, "requestTimeoutMs", 15 * 60_000);
    const { group, version, plural } = taskResource;
    this.#path = `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
  }

  times(name: string): TaskTimes {
    let times = this.tasks.get(name);
    if (times === undefined) {
      times = { createFailures: 0, events: [] };
      this.tasks.set(name, times);
    }
    return times;
  }

  async start(): Promise<void> {
    const api = this.kubeConfig.makeApiClient(CustomObjectsApi);
    const listed: unknown = await api.listNamespacedCustomObject({
      ...taskResource,
      namespace: this.namespace,
      limit: 1,
    });
    const metadata = isRecord(listed) ? listed.metadata : undefined;
    const version = isRecord(metadata) ? metadata.resourceVersion : undefined;
    this.#resourceVersion = typeof version === "string" ? version : "";
    await this.#open();
  }

  async #open(): Promise<void> {
    if (this.#closed) return;
    this.#abort = await this.#watch.watch(
      this.#path,
      { resourceVersion: this.#resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 1800 },
      (type: string, object: unknown) => this.#onEvent(type, object),
      (err: unknown) => {
        if (this.#closed) return;
        this.restarts += 1;
        if (err !== null && err !== undefined)
          process.stderr.write(`bench watch ended: ${String(err)}; restarting\n`);
        setTimeout(() => {
          this.#open().catch((e: unknown) =>
            process.stderr.write(`bench watch restart failed: ${String(e)}\n`),
          );
        }, 200);
      },
    );
  }

  #onEvent(type: string, object: unknown): void {
    const now = performance.now();
    if (!isRecord(object) || !isRecord(object.metadata)) return;
    const { name, resourceVersion, finalizers } = object.metadata;
    if (typeof resourceVersion === "string") this.#resourceVersion = resourceVersion;
    if (type === "BOOKMARK" || typeof name !== "string") return;
    this.events += 1;
    const times = this.times(name);
    const state = isRecord(object.status) ? object.status.state : undefined;
    if (typeof state === "string") times.lastState = state;
    times.finalizers = Array.isArray(finalizers) ? finalizers.length : 0;
    if (state === "Succeeded" && times.succeededAt === undefined) times.succeededAt = now;
    const deleting = object.metadata.deletionTimestamp === undefined ? "" : " deleting";
    times.events = [
      ...times.events.slice(-7),
      `${type} rv${String(resourceVersion)} ${String(state ?? "-")} fin=${times.finalizers}${deleting} @${Date.now() % 1_000_000}`,
    ];
    if (type === "DELETED") times.goneAt = now;
  }

  stop(): void {
    this.#closed = true;
    this.#abort?.abort();
  }
}

/** What the controller leaves on a task it has run to Succeeded (copied from one it did run). */
export interface SettledTemplate {
  readonly finalizers: readonly string[];
  readonly annotations: Readonly<Record<string, string>>;
  readonly status: Readonly<Record<string, unknown>>;
  /** The field manager the copies are written as (the controller's own, so that they look its own). */
  readonly fieldManager?: string;
}

/** Reads a task the controller finished, to create more like it (undefined if not Succeeded). */
export const settledTemplate = async (
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
): Promise<SettledTemplate | undefined> => {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const task: unknown = await api.getNamespacedCustomObject({ ...taskResource, namespace, name });
  if (!isRecord(task) || !isRecord(task.metadata) || !isRecord(task.status)) return undefined;
  if (task.status.state !== "Succeeded") return undefined;
  const { finalizers, annotations } = task.metadata;
  return {
    finalizers: Array.isArray(finalizers) ? finalizers.filter((f) => typeof f === "string") : [],
    annotations: isRecord(annotations)
      ? Object.fromEntries(
          Object.entries(annotations).filter((e): e is [string, string] => typeof e[1] === "string"),
        )
      : {},
    status: task.status,
  };
};

const rfc3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * The template's status made this task's own, as if each task had run at its own time: every
 * timestamp moved `index` seconds later and run IDs suffixed. (Identical copies would flatter any
 * sharing of equal strings in the controller's cache.)
 */
const statusFor = (status: unknown, index: number, field = ""): unknown => {
  if (typeof status === "string") {
    if (rfc3339.test(status))
      return new Date(Date.parse(status) + index * 1000).toISOString().replace(".000Z", "Z");
    return field === "runID" ? `${status}-${index}` : status;
  }
  if (Array.isArray(status)) return status.map((item) => statusFor(item, index));
  if (isRecord(status))
    return Object.fromEntries(
      Object.entries(status).map(([key, value]) => [key, statusFor(value, index, key)]),
    );
  return status;
};

/**
 * Creates tasks with at most `inFlight` requests at once (a failed request is retried up to 4 times).
 * Records send and response times in `watch`. With `settled`, each task is created as the controller
 * leaves a Succeeded one (finalizer, annotations, then its status by a second request).
 */
export const createTasks = async (
  kubeConfig: KubeConfig,
  namespace: string,
  specs: ReadonlyArray<{ readonly name: string; readonly etcdName: string; readonly ttl: number }>,
  inFlight: number,
  watch: TaskWatch,
  settled?: SettledTemplate,
): Promise<{ failures: number }> => {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  let next = 0;
  let failures = 0;
  const retried = async (what: string, request: () => Promise<unknown>): Promise<boolean> => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        await request();
        return true;
      } catch (err) {
        failures += 1;
        if (attempt >= 4) {
          process.stderr.write(`${what} failed for good: ${String(err)}\n`);
          return false;
        }
        await sleep(100 * 2 ** attempt);
      }
    }
  };
  const worker = async (): Promise<void> => {
    for (;;) {
      const index = next;
      const spec = specs[index];
      next += 1;
      if (spec === undefined) return;
      const times = watch.times(spec.name);
      times.sentAt = performance.now();
      const created = await retried(`create ${spec.name}`, () =>
        api
          .createNamespacedCustomObject({
            ...taskResource,
            namespace,
            ...(settled?.fieldManager === undefined ? {} : { fieldManager: settled.fieldManager }),
            body: {
              apiVersion: "druid.gardener.cloud/v1alpha1",
              kind: "EtcdOpsTask",
              metadata: {
                name: spec.name,
                namespace,
                ...(settled === undefined
                  ? {}
                  : { finalizers: [...settled.finalizers], annotations: { ...settled.annotations } }),
              },
              spec: {
                etcdName: spec.etcdName,
                ttlSecondsAfterFinished: spec.ttl,
                config: { onDemandSnapshot: { type: "full", timeoutSecondsFull: 150 } },
              },
            },
          })
          .catch((err: unknown) => {
            // A retried create whose first attempt went through.
            if (isRecord(err) && err.code === 409) return undefined;
            throw err;
          }),
      );
      if (!created) {
        times.createFailures += 1;
        continue;
      }
      if (settled !== undefined) {
        await retried(`status of ${spec.name}`, () =>
          api.patchNamespacedCustomObjectStatus(
            {
              ...taskResource,
              namespace,
              name: spec.name,
              body: { status: statusFor(settled.status, index) },
              ...(settled.fieldManager === undefined ? {} : { fieldManager: settled.fieldManager }),
            },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          ),
        );
      }
      times.createdAt = performance.now();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { failures };
};

// ---- figures -------------------------------------------------------------------------------------

/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted: readonly number[], p: number): number => {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
};

export const fmt = (n: number, digits = 1): string =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }) : "–";

export const mb = (bytes: number): string => fmt(bytes / 2 ** 20, 1);

export const table = (header: readonly string[], rows: ReadonlyArray<readonly string[]>, right = true) => {
  const lines = [
    `| ${header.join(" | ")} |`,
    `|${header.map((_, i) => (i === 0 || !right ? "---" : "---:")).join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ];
  console.log(lines.join("\n"));
  console.log();
};
