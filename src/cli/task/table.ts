/**
 * `get`: the tasks as a table with the columns of the CRD's printer columns plus what one looks for
 * next (NAME, STATE, ETCD, PHASE, AGE, LAST ERROR; NAMESPACE first with -A). `-w` prints the table,
 * then a row per visible change, as `kubectl get -w` does.
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import type { KubeError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type Cluster, listTasks, watchTasks } from "./cluster.ts";
import { humanDuration } from "./human-duration.ts";
import type { Output } from "./io.ts";
import { lastErrorOf, phaseOf, type TaskView, viewOf } from "./task-view.ts";

/** kubectl prints `<none>` for a cell without a value. */
const none = "<none>";

export const columns = ["NAME", "STATE", "ETCD", "PHASE", "AGE", "LAST ERROR"] as const;

/** STATE shows `Deleting` once a deletion is requested, and `Deleted` for a watch's last word. */
export const rowOf = (
  view: TaskView,
  now: number,
  allNamespaces: boolean,
  deleted = false,
): ReadonlyArray<string> => [
  ...(allNamespaces ? [view.namespace] : []),
  view.name,
  deleted ? "Deleted" : view.deletingSince !== undefined ? "Deleting" : (view.status.state ?? none),
  view.etcdName === undefined || view.etcdName === "" ? none : view.etcdName,
  phaseOf(view.status) ?? none,
  view.createdAt === undefined ? none : humanDuration(now - view.createdAt),
  lastErrorOf(view.status)?.code ?? none,
];

export const headerOf = (allNamespaces: boolean): ReadonlyArray<string> => [
  ...(allNamespaces ? ["NAMESPACE"] : []),
  ...columns,
];

const gap = 3;

/** Column widths that fit every row (kubectl's tabwriter: padding 3). */
export const widthsOf = (rows: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<number> => {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return widths;
};

/** One row, cells padded to `widths` (the last cell is never padded). */
export const formatRow = (row: ReadonlyArray<string>, widths: ReadonlyArray<number>): string =>
  row
    .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + gap)))
    .join("")
    .trimEnd();

export const formatTable = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = widthsOf(rows);
  return rows.map((row) => `${formatRow(row, widths)}\n`).join("");
};

const byName = (a: TaskView, b: TaskView): number =>
  a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);

export interface GetOptions {
  readonly cluster: Cluster;
  /** undefined: all namespaces. */
  readonly namespace: string | undefined;
  readonly watch: boolean;
  readonly stdout: Output;
  readonly stderr: Output;
}

export const getTasks = (options: GetOptions): Effect.Effect<number, KubeError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { cluster, namespace, stdout, stderr } = options;
      const all = namespace === undefined;
      const views = (yield* listTasks(cluster, namespace)).map(viewOf).sort(byName);
      const now = Date.now();
      const rows = [headerOf(all), ...views.map((view) => rowOf(view, now, all))];
      if (views.length === 0)
        stderr.write(all ? "No resources found\n" : `No resources found in ${namespace} namespace.\n`);
      else stdout.write(formatTable(rows));
      if (!options.watch) return 0;

      // Later rows keep the first table's widths (a longer cell only pushes its own row).
      const widths =
        views.length > 0 ? widthsOf(rows) : widthsOf([...rows, headerOf(all).map(() => "".padEnd(20))]);
      let headerShown = views.length > 0;
      const printed = new Map<string, string>();
      const key = (row: ReadonlyArray<string>): string =>
        row.filter((_, i) => i !== row.length - 2).join("\t");
      for (const view of views) printed.set(view.uid, key(rowOf(view, now, all)));
      const informer = yield* watchTasks(cluster, namespace);
      yield* informer.changes.pipe(
        Stream.runForEach((change: { readonly type: string; readonly object: KubeObject }) =>
          Effect.sync(() => {
            const view = viewOf(change.object);
            const row = rowOf(view, Date.now(), all, change.type === "DELETED");
            // The subscription starts with the cached objects; print only what differs from the screen.
            if (printed.get(view.uid) === key(row)) return;
            printed.set(view.uid, key(row));
            if (change.type === "DELETED") printed.delete(view.uid);
            if (!headerShown) stdout.write(`${formatRow(headerOf(all), widths)}\n`);
            headerShown = true;
            stdout.write(`${formatRow(row, widths)}\n`);
          }),
        ),
      );
      return 0;
    }),
  );
