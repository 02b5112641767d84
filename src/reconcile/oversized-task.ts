/**
 * A task too large for the controller's cache. Its author can put a megabyte in a spec string or its
 * finalizers; the cache keeps no such task whole (memory would grow with what authors write, not with
 * how many tasks there are), only a stub: identity, resourceVersion, finalizers, the annotations the
 * controller reads and a small status, marked with the size it measured (src/runtime/task-cache.ts).
 *
 * The lifecycle treats a stub as it treats a task whose spec does not decode: Rejected, here with
 * ERR_TASK_TOO_LARGE naming the size, the limit and the fix; its finalizer released and the task
 * deleted after the kind's default TTL, like any Rejected task. The mark is a symbol: it never reaches
 * JSON, and no task author can write it.
 */

/** The default bound on one task as cached (`--max-task-bytes`): ~3× the largest task the controller writes. */
export const DefaultMaxTaskBytes = 64 * 1024;

export interface OversizedTask {
  /** About how many bytes of JSON the task's kept parts hold. */
  readonly bytes: number;
  /** The controller's bound. */
  readonly limit: number;
  /**
   * False when even the stub's metadata (its finalizers and the annotations the controller reads)
   * would exceed half the bound: nothing is kept that a write could be built from, so the task is
   * left alone (logged), never written.
   */
  readonly actionable: boolean;
}

const oversizedMark: unique symbol = Symbol("opstask.oversizedTask");

/** Marks `stub` (changed in place and returned) as standing for a task of `oversized.bytes`. */
export const markOversized = <O extends object>(stub: O, oversized: OversizedTask): O =>
  Object.defineProperty(stub, oversizedMark, { value: oversized, enumerable: false });

/** The mark of a stub; undefined for a task kept whole. */
export const oversizedOf = (object: unknown): OversizedTask | undefined => {
  if (typeof object !== "object" || object === null) return undefined;
  const mark: unknown = Reflect.get(object, oversizedMark);
  return typeof mark === "object" && mark !== null ? (mark as OversizedTask) : undefined;
};

const kib = (bytes: number): string => `${Math.ceil(bytes / 1024).toLocaleString("en-US")} KiB`;

/** The error's cause: the size, the bound, and what to do. */
export const tooLargeReason = ({ bytes, limit }: OversizedTask): string =>
  `the task holds about ${kib(bytes)} (spec, status, finalizers and the annotations the controller reads), over the controller's limit of ${kib(limit)} (--max-task-bytes): make the task smaller, or raise the limit`;
