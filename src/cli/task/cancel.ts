/**
 * `cancel NAME…`: asks the controller to stop each task (docs/contract.md, "Cancel"): an annotation
 * bound to the task's UID, with who asked as the apiserver names the caller. A finished task keeps its
 * outcome and is reported so; a task cancelled already is left as it is (a cancel is never taken back).
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import { isTerminal } from "../../api/status.ts";
import { terminalText } from "../../api/terminal-text.ts";
import type { KubeError } from "../../kube/errors.ts";
import { cancelAnnotation, cancelledByAnnotation } from "../../reconcile/task-kind.ts";
import { qualifiedName } from "./cli-kind.ts";
import { annotateTask, type Cluster, getTask, whoAmI } from "./cluster.ts";
import type { Output } from "./io.ts";
import { viewOf } from "./task-view.ts";

export interface CancelOptions {
  readonly cluster: Cluster;
  readonly namespace: string;
  readonly names: ReadonlyArray<string>;
  readonly stdout: Output;
  readonly stderr: Output;
}

/** The object's annotations; absent or malformed ones read as none. */
const annotationsOf = (metadata: {
  readonly [field: string]: unknown;
}): Readonly<Record<string, unknown>> => {
  const annotations = metadata.annotations;
  return typeof annotations === "object" && annotations !== null
    ? (annotations as Record<string, unknown>)
    : {};
};

export const cancelTasks = (options: CancelOptions): Effect.Effect<number, never> =>
  Effect.gen(function* () {
    const { cluster, namespace, stdout, stderr } = options;
    const what = qualifiedName(cluster.kind);
    const by = (yield* whoAmI(cluster)) ?? "an unnamed user";
    let failed = false;
    for (const name of options.names) {
      const result = yield* Effect.result(cancelOne(cluster, namespace, name, by));
      if (Result.isSuccess(result)) stdout.write(`${what} "${name}" ${result.success}\n`);
      else {
        failed = true;
        const error: KubeError = result.failure;
        stderr.write(
          `Error from server (${error.reason}): ${what} "${name}": ${terminalText(error.message)}\n`,
        );
      }
    }
    return failed ? 1 : 0;
  });

const cancelOne = (cluster: Cluster, namespace: string, name: string, by: string) =>
  Effect.gen(function* () {
    const task = yield* getTask(cluster, namespace, name);
    const { uid } = task.metadata;
    const annotations = annotationsOf(task.metadata);
    const state = viewOf(cluster.kind, task).status.state;
    if (annotations[cancelAnnotation] === uid)
      return `already cancelled by ${terminalText(String(annotations[cancelledByAnnotation] ?? "an unnamed user"))}`;
    if (isTerminal(state)) return `already ${state}: the cancel has no effect, the outcome stays`;
    yield* annotateTask(cluster, namespace, name, uid, {
      [cancelAnnotation]: uid,
      [cancelledByAnnotation]: by,
    });
    return `cancelled (by ${terminalText(by)})`;
  });
