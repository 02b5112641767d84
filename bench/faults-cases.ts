/**
 * The faults of the suite (bench/faults.ts): how each one is injected, and what it notes. Each gets
 * the control plane, the namespace, the controllers (and their proxies) of its run.
 */
import type { ControlPlane } from "../src/devcluster/control-plane.ts";
import type { FaultProxy } from "./faults-proxy.ts";
import { compactEtcd, leaseHolderPid, type SupervisedController, sleep } from "./faults-support.ts";

/** What a fault's injection hands back: when the late tasks were created, and what to note. */
export interface Injected {
  /** The fault is lifted: recovery is measured from here. */
  readonly liftedAt: number;
  readonly notes: string[];
}

export interface FaultContext {
  readonly cp: ControlPlane;
  readonly namespace: string;
  readonly controllers: SupervisedController[];
  readonly proxies: FaultProxy[];
  /** Resolves once `n` snapshot POSTs arrived. */
  readonly posts: (n: number) => Promise<void>;
  readonly createLate: () => Promise<void>;
}

export interface FaultSpec {
  readonly controllers: number;
  readonly via: "direct" | "proxy";
  readonly apiserverArgs?: readonly string[];
  readonly inject: (ctx: FaultContext) => Promise<Injected>;
}

export const faults: Record<string, FaultSpec> = {
  none: {
    controllers: 1,
    via: "direct",
    inject: async (ctx) => {
      await ctx.posts(3);
      const liftedAt = Date.now();
      await ctx.createLate();
      return { liftedAt, notes: [] };
    },
  },
  "kill-9": {
    controllers: 1,
    via: "direct",
    inject: async (ctx) => {
      await ctx.posts(3);
      ctx.controllers[0]?.signal("SIGKILL");
      const liftedAt = Date.now();
      await ctx.createLate();
      return { liftedAt, notes: ["recovery from the kill"] };
    },
  },
  "frozen-leader": {
    controllers: 2,
    via: "proxy",
    inject: async (ctx) => {
      await ctx.posts(3);
      const kc = ctx.cp.makeKubeConfig();
      const holder = await leaseHolderPid(kc, ctx.namespace);
      const leader = ctx.controllers.findIndex((c) => c.pid === holder);
      const frozen = ctx.controllers[leader];
      if (frozen === undefined) return { liftedAt: Date.now(), notes: ["no leader found"] };
      frozen.signal("SIGSTOP");
      const frozenAt = Date.now();
      await ctx.createLate();
      let takenAt: number | undefined;
      for (let i = 0; i < 600 && takenAt === undefined; i++) {
        const now = await leaseHolderPid(kc, ctx.namespace);
        if (now !== undefined && now !== holder) takenAt = Date.now();
        else await sleep(100);
      }
      await sleep(10_000);
      frozen.signal("SIGCONT");
      await sleep(5_000);
      const after = (ctx.proxies[leader]?.requests ?? []).filter(
        (r) => takenAt !== undefined && r.at > takenAt && r.method !== "GET",
      );
      const kinds = new Map<string, number>();
      for (const r of after) {
        const kind = `${r.method} ${r.path.split("/").at(-2) === "namespaces" ? r.path.split("/").at(-1) : (r.path.split("/").at(-2) ?? "")}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      const taskWrites = after.filter((r) => r.path.includes("/etcdopstasks")).length;
      return {
        liftedAt: frozenAt,
        notes: [
          `recovery from the freeze; Lease taken over after ${((takenAt ?? Number.NaN) - frozenAt) / 1000} s`,
          `old leader after losing the Lease: ${taskWrites} task writes, ${after.length} writes in all${
            after.length === 0 ? "" : ` (${[...kinds].map(([k, n]) => `${k} ×${n}`).join(", ")})`
          }`,
        ],
      };
    },
  },
  "apiserver-restart": {
    controllers: 1,
    via: "direct",
    inject: async (ctx) => {
      await ctx.posts(3);
      const killedAt = Date.now();
      await ctx.cp.restartApiserver({ signal: "SIGKILL", downMs: 2_000 });
      const liftedAt = Date.now();
      await ctx.createLate();
      return {
        liftedAt,
        notes: [`API ready again ${(liftedAt - killedAt) / 1000} s after the kill; recovery from then`],
      };
    },
  },
  "apiserver-outage": {
    controllers: 1,
    via: "direct",
    inject: async (ctx) => {
      await ctx.posts(3);
      const killedAt = Date.now();
      await ctx.cp.restartApiserver({ signal: "SIGKILL", downMs: 60_000 });
      const liftedAt = Date.now();
      await ctx.createLate();
      return {
        liftedAt,
        notes: [
          `kube-apiserver down for 60 s, ready again ${(liftedAt - killedAt) / 1000} s after the kill; recovery from then`,
        ],
      };
    },
  },
  "etcd-outage": {
    controllers: 1,
    via: "direct",
    inject: async (ctx) => {
      await ctx.posts(3);
      const etcd = ctx.cp.processes().etcd;
      process.kill(etcd.pid, "SIGSTOP");
      await sleep(30_000);
      process.kill(etcd.pid, "SIGCONT");
      const liftedAt = Date.now();
      await ctx.createLate();
      return { liftedAt, notes: ["etcd stopped 30 s; recovery from SIGCONT"] };
    },
  },
  "watch-expiry": {
    controllers: 1,
    via: "proxy",
    apiserverArgs: ["--watch-cache=false"],
    inject: async (ctx) => {
      await ctx.posts(3);
      const proxy = ctx.proxies[0];
      if (proxy === undefined) return { liftedAt: Date.now(), notes: ["no proxy"] };
      proxy.holdWatches();
      for (let i = 0; i < 300 && proxy.held() < 2; i++) await sleep(100);
      await ctx.createLate();
      const revision = await compactEtcd(ctx.cp);
      await sleep(1_000);
      proxy.release();
      const liftedAt = Date.now();
      return {
        liftedAt,
        notes: [`watches held, late tasks created, etcd compacted at ${revision}; recovery from the release`],
      };
    },
  },
  "throttle-429": {
    controllers: 1,
    via: "proxy",
    inject: async (ctx) => {
      for (const proxy of ctx.proxies) proxy.throttle(0.3);
      await ctx.posts(3);
      const liftedAt = Date.now();
      await ctx.createLate();
      return {
        liftedAt,
        notes: ["30 % of requests answered 429 all along; recovery: late tasks created at 3 POSTs"],
      };
    },
  },
};
