/**
 * Parts of the fault suite (bench/faults.ts): the controller as a supervised process (restarted after
 * it exits, as the kubelet restarts a container), what the suite sees of the tasks (polled, so that it
 * rides through API outages itself), and etcd compaction.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { CoordinationV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import type { ControlPlane } from "../src/devcluster/control-plane.ts";
import { probe } from "../src/devcluster/http.ts";
import { freePort } from "../src/devcluster/ports.ts";
import { deployedEnv } from "../test/support/deployed-env.ts";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const druid = { group: "druid.gardener.cloud", version: "v1alpha1" };
export const leaseName = "opstask-controller";

// ---- the controller --------------------------------------------------------------------------------

export interface Incarnation {
  readonly pid: number;
  readonly startedAt: number;
  exitedAt?: number;
  exit?: string;
  /** The last /metrics text scraped from it. */
  metrics: string;
}

/**
 * `opstask controller` as the Deployment runs it (bundled, its NODE_OPTIONS, its flags), started again
 * a second after it exits until `stop()`. Its JSON log lines are kept; /metrics and /readyz polled.
 */
export class SupervisedController {
  readonly incarnations: Incarnation[] = [];
  /** WARN and ERROR log messages with their time. */
  readonly logs: Array<{ readonly at: number; readonly level: string; readonly message: string }> = [];
  /** /readyz answers other than 200, with their time and reason. */
  readonly notReady: Array<{ readonly at: number; readonly reason: string }> = [];
  #child: ChildProcess | undefined;
  #stopping = false;
  #timer: NodeJS.Timeout | undefined;

  readonly label: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly metricsPort: number;
  readonly probePort: number;

  private constructor(
    label: string,
    binary: string,
    args: readonly string[],
    metricsPort: number,
    probePort: number,
  ) {
    this.label = label;
    this.binary = binary;
    this.args = args;
    this.metricsPort = metricsPort;
    this.probePort = probePort;
  }

  static async start(label: string, binary: string, args: readonly string[]): Promise<SupervisedController> {
    const controller = new SupervisedController(label, binary, args, await freePort(), await freePort());
    controller.#spawn();
    controller.#timer = setInterval(() => void controller.#poll(), 1000);
    return controller;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  #spawn(): void {
    const child = spawn(
      process.execPath,
      [
        this.binary,
        "controller",
        ...this.args,
        // Loopback and read by the suite only: plain HTTP (the Deployment serves metrics securely).
        "--metrics-secure=false",
        `--metrics-address=127.0.0.1:${this.metricsPort}`,
        `--probe-address=127.0.0.1:${this.probePort}`,
        "--log-format=json",
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...deployedEnv() } },
    );
    this.#child = child;
    const incarnation: Incarnation = { pid: child.pid ?? -1, startedAt: Date.now(), metrics: "" };
    this.incarnations.push(incarnation);
    let partial = "";
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) this.#log(line);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code, signal) => {
      incarnation.exitedAt = Date.now();
      incarnation.exit = signal ?? `code ${code}`;
      if (!this.#stopping) setTimeout(() => this.#stopping || this.#spawn(), 1000);
    });
  }

  #log(line: string): void {
    try {
      const entry = JSON.parse(line) as { level?: unknown; message?: unknown };
      const level = String(entry.level ?? "");
      if (level === "WARN" || level === "ERROR" || level === "Warn" || level === "Error")
        this.logs.push({ at: Date.now(), level: level.toUpperCase(), message: String(entry.message ?? "") });
    } catch {
      if (line.trim() !== "") this.logs.push({ at: Date.now(), level: "TEXT", message: line.slice(0, 300) });
    }
  }

  async #poll(): Promise<void> {
    const current = this.incarnations.at(-1);
    if (current === undefined || current.exitedAt !== undefined) return;
    const signal = AbortSignal.timeout(900);
    try {
      const ready = await fetch(`http://127.0.0.1:${this.probePort}/readyz`, { signal });
      if (ready.status !== 200) this.notReady.push({ at: Date.now(), reason: (await ready.text()).trim() });
      const metrics = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`, { signal });
      current.metrics = await metrics.text();
    } catch {
      // stopped, starting, or frozen
    }
  }

  /** The sum over incarnations of a metric series (its last scrape each), e.g. `opstask_api_faults_total{operation="event",fault="dropped"}`. */
  metric(series: string): number {
    let total = 0;
    for (const { metrics } of this.incarnations)
      for (const line of metrics.split("\n"))
        if (line.startsWith(`${series} `)) total += Number(line.slice(series.length + 1));
    return total;
  }

  signal(name: NodeJS.Signals): void {
    if (this.#child?.pid !== undefined) process.kill(this.#child.pid, name);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#timer);
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGCONT");
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

/** The Lease holder's process id (identity `<host>_<pid>`), if any. */
export const leaseHolderPid = async (kc: KubeConfig, namespace: string): Promise<number | undefined> => {
  try {
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: leaseName, namespace });
    const holder = lease.spec?.holderIdentity;
    return holder === undefined || holder === "" ? undefined : Number(holder.split("_").at(-1));
  } catch {
    return undefined;
  }
};

// ---- the tasks as the suite sees them ---------------------------------------------------------------

export interface TaskSeen {
  createdAt: number;
  /** When a state first showed in its status (the controller took it up). */
  statusAt?: number;
  state?: string;
  terminalAt?: number;
  goneAt?: number;
  finalizers: number;
}

const terminal = new Set(["Succeeded", "Failed", "Rejected"]);

/** Polls the tasks of a namespace every 250 ms (API errors skipped: the API may be down). */
export class TaskPoller {
  readonly tasks = new Map<string, TaskSeen>();
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  readonly kc: KubeConfig;
  readonly namespace: string;

  constructor(kc: KubeConfig, namespace: string) {
    this.kc = kc;
    this.namespace = namespace;
    this.#timer = setInterval(() => void this.#poll(), 250);
  }

  created(name: string, at: number): void {
    this.tasks.set(name, { createdAt: at, finalizers: 0 });
  }

  async #poll(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const api = this.kc.makeApiClient(CustomObjectsApi);
      const list = (await api.listNamespacedCustomObject({
        ...druid,
        plural: "etcdopstasks",
        namespace: this.namespace,
      })) as {
        items: Array<{ metadata: { name: string; finalizers?: string[] }; status?: { state?: string } }>;
      };
      const now = Date.now();
      const present = new Set<string>();
      for (const item of list.items) {
        const seen = this.tasks.get(item.metadata.name);
        if (seen === undefined) continue;
        present.add(item.metadata.name);
        seen.finalizers = item.metadata.finalizers?.length ?? 0;
        const state = item.status?.state;
        if (state !== undefined && state !== "") {
          seen.statusAt ??= now;
          seen.state = state;
          if (terminal.has(state)) seen.terminalAt ??= now;
        }
      }
      for (const [name, seen] of this.tasks)
        if (!present.has(name) && seen.goneAt === undefined) seen.goneAt = now;
    } catch {
      // the API is away; next time
    } finally {
      this.#busy = false;
    }
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

// ---- etcd ---------------------------------------------------------------------------------------------

/** Compacts etcd's history up to its current revision (its JSON gateway, as kube-apiserver's client); returns the revision. */
export const compactEtcd = async (cp: Pick<ControlPlane, "etcdUrl" | "etcdTls">): Promise<number> => {
  const post = async (path: string, body: unknown) => {
    const response = await probe(`${cp.etcdUrl}${path}`, {
      body: JSON.stringify(body),
      caPem: cp.etcdTls.caPem,
      clientCertificate: cp.etcdTls.client,
      timeoutMs: 10_000,
    });
    if (response.status !== 200) throw new Error(`etcd ${path}: ${response.status} ${response.body}`);
    return JSON.parse(response.body) as { header?: { revision?: string } };
  };
  const range = await post("/v3/kv/range", { key: Buffer.from("/").toString("base64") });
  const revision = Number(range.header?.revision ?? 0);
  await post("/v3/kv/compaction", { revision: String(revision), physical: true });
  return revision;
};
