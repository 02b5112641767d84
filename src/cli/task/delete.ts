/**
 * `delete NAME… | -l SELECTOR`: deletes tasks as `kubectl delete` does, one line per task. The
 * controller then runs the task's cleanup and releases its finalizer; a running handler call is not
 * cut short by the deletion. A missing task is reported and the others are still deleted (exit 1).
 * With `--wait` it returns once the tasks are gone (cleanup done, every finalizer released), as
 * kubectl's default does; exit 3 when `--wait-timeout` runs out first.
 */
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import * as Schedule from "effect/Schedule";
import { terminalText } from "../../api/terminal-text.ts";
import type { KubeError } from "../../kube/errors.ts";
import { qualifiedName } from "./cli-kind.ts";
import { type Cluster, deleteTask, getTask, listTasks } from "./cluster.ts";
import { humanDuration } from "./human-duration.ts";
import type { Output } from "./io.ts";
import { WaitExit } from "./wait.ts";

export interface DeleteOptions {
  readonly cluster: Cluster;
  readonly namespace: string;
  readonly names: ReadonlyArray<string>;
  /** With no names: delete every task of the namespace matching it. */
  readonly labelSelector: string | undefined;
  /** Wait this long for the deleted tasks to be gone; undefined: return once the deletes are accepted. */
  readonly waitTimeoutMs: number | undefined;
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
    const deleted: string[] = [];
    for (const name of names) {
      const result = yield* Effect.result(deleteTask(cluster, namespace, name));
      if (Result.isSuccess(result)) {
        deleted.push(name);
        options.stdout.write(`${what} "${name}" deleted\n`);
      } else {
        failed = true;
        const error = result.failure;
        options.stderr.write(
          `Error from server (${error.reason}): ${what} "${name}": ${terminalText(error.message)}\n`,
        );
      }
    }
    if (options.waitTimeoutMs !== undefined && deleted.length > 0) {
      const gone = yield* Effect.timeoutOption(
        Effect.forEach(deleted, (name) => untilGone(cluster, namespace, name), { discard: true }),
        Duration.millis(options.waitTimeoutMs),
      );
      if (gone._tag === "None") {
        options.stderr.write(
          `error: timed out after ${humanDuration(options.waitTimeoutMs)} waiting for the deleted tasks to be gone (describe shows what holds them)\n`,
        );
        return WaitExit.timeout;
      }
    }
    return failed ? 1 : 0;
  });

/** Polls until the task is NotFound (a read error other than NotFound ends the wait with it). */
const untilGone = (cluster: Cluster, namespace: string, name: string): Effect.Effect<void, KubeError> =>
  getTask(cluster, namespace, name).pipe(
    Effect.as(false),
    Effect.catchTag("KubeError", (error) =>
      error.reason === "NotFound" ? Effect.succeed(true) : Effect.fail(error),
    ),
    Effect.repeat({ until: (isGone) => isGone, schedule: Schedule.spaced(Duration.millis(250)) }),
    Effect.asVoid,
  );
