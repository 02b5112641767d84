/**
 * Messages between bench/cluster.ts and the controller it runs in a child process
 * (bench/cluster-controller.ts), over Node's IPC channel.
 */
import type { RequestCount } from "../src/kube/request-metrics.ts";
import type { ControllerStats } from "../src/runtime/controller.ts";

export type ParentMessage =
  | { readonly type: "start" }
  | { readonly type: "sample"; readonly id: number; readonly gc: boolean }
  | { readonly type: "stop" };

export interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  /** V8's own allocations outside the JS heap (parser and compiler zones, GC bookkeeping). */
  readonly malloced: number;
  /** Physical memory the JS heap's committed pages occupy. */
  readonly heapPhysical: number;
}

export interface Sample {
  readonly memory: Memory;
  /** After a forced full GC (when asked for). */
  readonly memoryAfterGc?: Memory;
  /** CPU time of the child so far, in ms (user + system). */
  readonly cpuMs: number;
  /** Every API request of the controller so far (writer, event recorder and informers). */
  readonly requests: ReadonlyArray<RequestCount>;
  readonly controller?: ControllerStats;
  /** Outcomes of the controller's TaskWriter calls, by "method outcome" (ok, gone, or the error). */
  readonly writer: Readonly<Record<string, number>>;
  /** The recent writes of (up to 5) tasks that had a write not ok. */
  readonly traces: readonly string[];
  /** Log entries at Warn or above, by level, and the first few of them. */
  readonly logs: { readonly counts: Readonly<Record<string, number>>; readonly first: readonly string[] };
}

export type ChildMessage =
  | { readonly type: "loaded"; readonly sample: Sample }
  | { readonly type: "started"; readonly startMs: number }
  | { readonly type: "sample"; readonly id: number; readonly sample: Sample }
  | { readonly type: "stopped" }
  | { readonly type: "error"; readonly message: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null;

/** Trusts the other side of the channel (our own code) beyond the `type` tag. */
export const asParentMessage = (value: unknown): ParentMessage | undefined =>
  isRecord(value) && typeof value.type === "string" ? (value as unknown as ParentMessage) : undefined;

export const asChildMessage = (value: unknown): ChildMessage | undefined =>
  isRecord(value) && typeof value.type === "string" ? (value as unknown as ChildMessage) : undefined;
