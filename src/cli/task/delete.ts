/**
 * `delete NAME… | -l SELECTOR`: deletes tasks as `kubectl delete` does, one line per task. The
 * controller then runs the task's cleanup and releases its finalizer; a running handler call is not
 * cut short by the deletion. A missing task is reported and the others are still deleted (exit 1).
 */
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import type { KubeError } from "../../kube/errors.ts";
import { qualifiedName } from "./cli-kind.ts";
import { type Cluster, deleteTask, listTasks } from "./cluster.ts";
import type { Output } from "./io.ts";

export interface DeleteOptions {
  readonly cluster: Cluster;
  readonly namespace: string;
  readonly names: ReadonlyArray<string>;
  /** With no names: delete every task of the namespace matching it. */
  readonly labelSelector: string | undefined;
  readonly stdout: Output;
  readonly stderr: Output;
}

export const deleteTasks = (options: DeleteOptions): Effect.Effect<number, KubeError> =>
  Effect.gen(function* () {
    const { cluster, namespace } = options;
    const what = qualifiedName(cluster.kind);
    const names =
      options.names.length > 0
        ? options.names
        : (yield* listTasks(cluster, namespace, options.labelSelector)).map((object) => object.metadata.name);
    if (names.length === 0) {
      options.stderr.write(`No resources found in ${namespace} namespace.\n`);
      return 0;
    }
    let failed = false;
    for (const name of names) {
      const result = yield* Effect.result(deleteTask(cluster, namespace, name));
      if (Result.isSuccess(result)) options.stdout.write(`${what} "${name}" deleted\n`);
      else {
        failed = true;
        const error = result.failure;
        options.stderr.write(`Error from server (${error.reason}): ${what} "${name}": ${error.message}\n`);
      }
    }
    return failed ? 1 : 0;
  });
