/**
 * `--wait` (and `wait <task>`): follows a task until it ends, showing its progress. On a terminal the
 * progress is one line redrawn every second (state, phase, elapsed seconds, last error); otherwise a
 * line per visible change, so that logs stay readable. Exit codes: 0 Succeeded; 1 Failed, Rejected,
 * or deleted before it ended (the last error on stderr); 3 when `--wait-timeout` runs out first.
 */
import * as Deferred from "effect/Deferred";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Stream from "effect/Stream";
import { isTerminal } from "../../api/status.ts";
import type { KubeError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type Cluster, watchTasks } from "./cluster.ts";
import { why } from "./explain.ts";
import { humanDuration } from "./human-duration.ts";
import type { Output, TaskIo } from "./io.ts";
import { decodeLastError, errorLine, lastErrorOf, phaseOf, type TaskView, viewOf } from "./task-view.ts";

export const WaitExit = { succeeded: 0, failed: 1, timeout: 3, interrupted: 130 } as const;

interface Progress {
  /** The task changed. */
  show(view: TaskView): void;
  /** A second passed (terminals only: the elapsed time moves). */
  tick(): void;
  /** Ends the display (a terminal's line is finished with a newline). */
  end(): void;
}

const elapsedOf = (since: number): string => `${Math.floor((Date.now() - since) / 1000)}s`;

/** The progress line's parts after the elapsed time. */
const partsOf = (view: TaskView): ReadonlyArray<string> => {
  const last = lastErrorOf(view.status);
  return [
    view.name,
    view.status.state ?? "<none>",
    phaseOf(view.status) ?? "<none>",
    ...(last === undefined ? [] : [`last error: ${last.code}`]),
    ...(view.status.lastOperation === undefined ? [] : [view.status.lastOperation.description]),
  ];
};

const makeProgress = (out: Output, since: number): Progress => {
  let current: TaskView | undefined;
  if (out.isTTY) {
    let drawn = false;
    const draw = (): void => {
      if (current === undefined) return;
      const line = [elapsedOf(since), ...partsOf(current)].join("  ");
      const width = (out.columns ?? 0) > 1 ? (out.columns ?? 0) - 1 : Number.POSITIVE_INFINITY;
      // Cut to the width: a wrapped line cannot be redrawn with \r.
      out.write(`\r\x1b[2K${line.length > width ? `${line.slice(0, width - 1)}…` : line}`);
      drawn = true;
    };
    return {
      show: (view) => {
        current = view;
        draw();
      },
      tick: draw,
      end: () => {
        if (drawn) out.write("\n");
        drawn = false;
      },
    };
  }
  let shown = "";
  return {
    show: (view) => {
      const key = partsOf(view).join("  ");
      if (key === shown) return;
      shown = key;
      out.write(`${elapsedOf(since)}  ${key}\n`);
    },
    tick: () => {},
    end: () => {},
  };
};

export interface WaitOptions {
  readonly cluster: Cluster;
  /** The task as last read (e.g. as its creation returned it). */
  readonly task: KubeObject;
  readonly timeoutMs: number;
  readonly io: TaskIo;
}

/** The task ended (terminal state), or was deleted before it did. */
interface Ending {
  readonly deleted: boolean;
  readonly view: TaskView;
}

export const waitForTask = (options: WaitOptions): Effect.Effect<number, KubeError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { io } = options;
      const since = Date.now();
      const progress = makeProgress(io.stdout, since);
      let latest = viewOf(options.cluster.kind, options.task);
      const { name, namespace, uid } = latest;
      const hint = `${io.program} describe ${name} -n ${namespace}`;
      progress.show(latest);

      const done = yield* Deferred.make<Ending>();
      if (isTerminal(latest.status.state)) yield* Deferred.succeed(done, { deleted: false, view: latest });
      else {
        const informer = yield* watchTasks(options.cluster, namespace);
        yield* informer.changes.pipe(
          Stream.filter((change) => change.object.metadata.uid === uid),
          Stream.runForEach((change) => {
            latest = viewOf(options.cluster.kind, change.object);
            if (change.type === "DELETED") return Deferred.succeed(done, { deleted: true, view: latest });
            progress.show(latest);
            return isTerminal(latest.status.state)
              ? Deferred.succeed(done, { deleted: false, view: latest })
              : Effect.void;
          }),
          Effect.forkScoped,
        );
        if (io.stdout.isTTY)
          yield* Effect.sleep(Duration.seconds(1)).pipe(
            Effect.andThen(Effect.sync(() => progress.tick())),
            Effect.forever,
            Effect.forkScoped,
          );
      }

      const ending = yield* Deferred.await(done).pipe(
        Effect.timeoutOption(Duration.millis(options.timeoutMs)),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            progress.end();
            io.stderr.write(
              `interrupted after ${elapsedOf(since)}: ${name} is ${latest.status.state ?? "not started"} and keeps going; ${hint}\n`,
            );
          }),
        ),
      );
      progress.end();
      const elapsed = elapsedOf(since);
      if (Option.isNone(ending)) {
        io.stderr.write(
          `error: timed out after ${humanDuration(options.timeoutMs)} waiting for ${name}, which keeps going\n` +
            `  why: ${why(latest, Date.now())}\n  see: ${hint}\n`,
        );
        return WaitExit.timeout;
      }
      const { view } = ending.value;
      if (ending.value.deleted) {
        io.stderr.write(
          `error: ${name} was deleted after ${elapsed} before it ended (state ${view.status.state ?? "none"})\n`,
        );
        return WaitExit.failed;
      }
      if (view.status.state === "Succeeded") {
        io.stdout.write(
          `${name} Succeeded after ${elapsed}: ${view.status.lastOperation?.description ?? "done"}\n`,
        );
        return WaitExit.succeeded;
      }
      const last = lastErrorOf(view.status);
      io.stderr.write(
        `error: ${name} ${view.status.state ?? "ended"} after ${elapsed}: ${
          last === undefined
            ? (view.status.lastOperation?.description ?? "no error recorded")
            : errorLine(decodeLastError(last))
        }\n  see: ${hint}\n`,
      );
      return WaitExit.failed;
    }),
  );
