/**
 * `get [NAME…]`: tasks as a table with the columns of the CRD's printer columns plus what one looks
 * for next (NAME, STATE, <group>, PHASE, AGE, LAST ERROR; NAMESPACE first with -A; `-o wide` adds TYPE
 * and the last operation's description), or as JSON, YAML or names (`-o`). `-l` selects by label.
 * `-w` prints the first answer, then a row (or document) per visible change, as `kubectl get -w` does.
 */
import * as Effect from "effect/Effect";
import * as Stream from "effect/Stream";
import type { KubeError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type Cluster, getTask, listTasks, watchTasks } from "./cluster.ts";
import { humanDuration } from "./human-duration.ts";
import type { Output } from "./io.ts";
import { type OutputFormat, renderChange, renderObjects } from "./output.ts";
import { lastErrorOf, phaseOf, type TaskView, viewOf } from "./task-view.ts";

/** kubectl prints `<none>` for a cell without a value. */
const none = "<none>";

export interface Layout {
  readonly allNamespaces: boolean;
  readonly wide: boolean;
}

const cell = (value: string | undefined): string => (value === undefined || value === "" ? none : value);

/** STATE shows `Deleting` once a deletion is requested, and `Deleted` for a watch's last word. */
export const rowOf = (
  view: TaskView,
  now: number,
  layout: Layout,
  deleted = false,
): ReadonlyArray<string> => [
  ...(layout.allNamespaces ? [view.namespace] : []),
  view.name,
  deleted ? "Deleted" : view.deletingSince !== undefined ? "Deleting" : cell(view.status.state),
  cell(view.group),
  cell(phaseOf(view.status)),
  view.createdAt === undefined ? none : humanDuration(now - view.createdAt),
  cell(lastErrorOf(view.status)?.code),
  ...(layout.wide ? [cell(view.member), cell(view.status.lastOperation?.description)] : []),
];

export const headerOf = (view: Pick<TaskView, "kind">, layout: Layout): ReadonlyArray<string> => [
  ...(layout.allNamespaces ? ["NAMESPACE"] : []),
  "NAME",
  "STATE",
  view.kind.groupHeader,
  "PHASE",
  "AGE",
  "LAST ERROR",
  ...(layout.wide ? ["TYPE", "DESCRIPTION"] : []),
];

const gap = 3;

/** Column widths that fit every row (kubectl's tabwriter: padding 3). */
export const widthsOf = (rows: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<number> => {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((text, i) => {
      widths[i] = Math.max(widths[i] ?? 0, text.length);
    });
  }
  return widths;
};

/** One row, cells padded to `widths` (the last cell is never padded). */
export const formatRow = (row: ReadonlyArray<string>, widths: ReadonlyArray<number>): string =>
  row
    .map((text, i) => (i === row.length - 1 ? text : text.padEnd((widths[i] ?? 0) + gap)))
    .join("")
    .trimEnd();

export const formatTable = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = widthsOf(rows);
  return rows.map((row) => `${formatRow(row, widths)}\n`).join("");
};

const byName = (a: KubeObject, b: KubeObject): number =>
  a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name);

export interface GetOptions {
  readonly cluster: Cluster;
  /** undefined: all namespaces. */
  readonly namespace: string | undefined;
  /** Tasks asked for by name (one namespace); empty: every task (matching `labelSelector`). */
  readonly names: ReadonlyArray<string>;
  readonly labelSelector: string | undefined;
  readonly output: OutputFormat;
  /** With `-o json|yaml`: keep `metadata.managedFields` (who wrote which field). */
  readonly showManagedFields: boolean;
  readonly watch: boolean;
  readonly stdout: Output;
  readonly stderr: Output;
}

/** The tasks asked for: by name (every name is fetched; the first missing one fails), else listed. */
const fetchTasks = (options: GetOptions): Effect.Effect<ReadonlyArray<KubeObject>, KubeError> =>
  options.names.length > 0 && options.namespace !== undefined
    ? Effect.forEach(options.names, (name) => getTask(options.cluster, options.namespace ?? "", name))
    : listTasks(options.cluster, options.namespace, options.labelSelector).pipe(
        Effect.map((objects) => [...objects].sort(byName)),
      );

export const getTasks = (options: GetOptions): Effect.Effect<number, KubeError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { cluster, namespace, stdout, stderr, output } = options;
      const kind = cluster.kind;
      const layout: Layout = { allNamespaces: namespace === undefined, wide: output === "wide" };
      const objects = yield* fetchTasks(options);
      const now = Date.now();
      const header = headerOf({ kind }, layout);
      const rows = [header, ...objects.map((object) => rowOf(viewOf(kind, object), now, layout))];
      const tabular = output === "table" || output === "wide";
      if (tabular && objects.length === 0)
        stderr.write(
          namespace === undefined
            ? "No resources found\n"
            : `No resources found in ${namespace} namespace.\n`,
        );
      else if (tabular) stdout.write(formatTable(rows));
      else
        stdout.write(
          renderObjects(kind, output, objects, options.names.length === 1, options.showManagedFields),
        );
      if (!options.watch) return 0;

      // Later rows keep the first table's widths (a longer cell only pushes its own row).
      const widths =
        objects.length > 0 ? widthsOf(rows) : widthsOf([...rows, header.map(() => "".padEnd(20))]);
      let headerShown = objects.length > 0;
      const printed = new Map<string, string>();
      // The AGE column changes by itself; a change is what differs in the other cells or the object.
      const key = (object: KubeObject, row: ReadonlyArray<string>): string =>
        tabular
          ? row.filter((_, i) => i !== header.indexOf("AGE")).join("\t")
          : object.metadata.resourceVersion;
      for (const object of objects)
        printed.set(object.metadata.uid, key(object, rowOf(viewOf(kind, object), now, layout)));
      const wanted = new Set(options.names);
      const informer = yield* watchTasks(cluster, namespace, options.labelSelector);
      yield* informer.changes.pipe(
        Stream.filter((change) => wanted.size === 0 || wanted.has(change.object.metadata.name)),
        Stream.runForEach((change: { readonly type: string; readonly object: KubeObject }) =>
          Effect.sync(() => {
            const view = viewOf(kind, change.object);
            const row = rowOf(view, Date.now(), layout, change.type === "DELETED");
            // The subscription starts with the cached objects; print only what differs from the screen.
            const shown = key(change.object, row);
            if (printed.get(view.uid) === shown) return;
            printed.set(view.uid, shown);
            if (change.type === "DELETED") printed.delete(view.uid);
            if (!tabular) {
              stdout.write(renderChange(kind, output, change.object, options.showManagedFields));
              return;
            }
            if (!headerShown) stdout.write(`${formatRow(header, widths)}\n`);
            headerShown = true;
            stdout.write(`${formatRow(row, widths)}\n`);
          }),
        ),
      );
      return 0;
    }),
  );
