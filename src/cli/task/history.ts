/**
 * `opstask history [<target>]`: what the controller's history ConfigMap (src/history) says of a
 * target, one row per task type: last success, last failure, last outcome, its duration and error
 * code. Without a target, every target of the namespace (a TARGET column first). Works for any task
 * kind (`--kind`); the target is what the kind names as one (EtcdOpsTask: the Etcd).
 */
import * as Effect from "effect/Effect";
import { decodeEntries, entriesDataKey, type HistoryEntry } from "../../history/history-entry.ts";
import { historyConfigMapName } from "../../history/history-store.ts";
import { apiPath } from "../../kube/api-path.ts";
import { KubeError, toKubeError } from "../../kube/errors.ts";
import { ApiCallError } from "../../kube/kube-client.ts";
import { OptionError } from "../options.ts";
import { type FlagSpecs, parseFlags, resolveTarget, stringFlag } from "./args.ts";
import { type CliKind, describeKinds } from "./cli-kind.ts";
import type { TaskCommandSpec } from "./command.ts";
import { humanDuration } from "./human-duration.ts";
import { formatTable } from "./table.ts";

const none = "<none>";

const timeCell = (ms: number | undefined, now: number): string =>
  ms === undefined
    ? none
    : `${new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")} (${humanDuration(now - ms)} ago)`;

const durationCell = (seconds: number): string =>
  seconds < 10 ? `${Math.round(seconds * 10) / 10}s` : humanDuration(seconds * 1000);

/** The table: one row per target and type, sorted; `withTarget` adds the TARGET column first. */
export const historyTable = (
  entries: ReadonlyArray<HistoryEntry>,
  now: number,
  withTarget: boolean,
): string => {
  const header = ["TYPE", "LAST SUCCESS", "LAST FAILURE", "LAST OUTCOME", "DURATION", "ERROR CODE"];
  const rows = [...entries]
    .sort((a, b) => a.target.localeCompare(b.target) || a.type.localeCompare(b.type))
    .map((entry) => {
      const row = [
        entry.type,
        timeCell(entry.lastSuccessAt, now),
        timeCell(entry.lastFailureAt, now),
        `${entry.last.state} ${humanDuration(now - entry.last.at)} ago`,
        durationCell(entry.last.durationSeconds),
        entry.last.errorCode ?? none,
      ];
      return withTarget ? [entry.target, ...row] : row;
    });
  return formatTable([withTarget ? ["TARGET", ...header] : header, ...rows]);
};

/** The entries as JSON, times as RFC 3339 (what `-o json` prints). */
export const historyJson = (entries: ReadonlyArray<HistoryEntry>): string =>
  `${JSON.stringify(
    entries.map((entry) => ({
      target: entry.target,
      type: entry.type,
      lastOutcome: {
        state: entry.last.state,
        time: new Date(entry.last.at).toISOString(),
        durationSeconds: entry.last.durationSeconds,
        ...(entry.last.errorCode === undefined ? {} : { errorCode: entry.last.errorCode }),
      },
      lastSuccessTime: entry.lastSuccessAt === undefined ? null : new Date(entry.lastSuccessAt).toISOString(),
      lastFailureTime: entry.lastFailureAt === undefined ? null : new Date(entry.lastFailureAt).toISOString(),
    })),
    null,
    2,
  )}\n`;

const flags = { output: { type: "string", short: "o" } } as const satisfies FlagSpecs;

export const historyCommandSpec = (kinds: ReadonlyArray<CliKind>): TaskCommandSpec => ({
  name: "history",
  summary: "last outcomes per task type of a target, kept after the tasks' TTL: history [<target>] [-o json]",
  usage: `Usage: {program} history [<target>] [-n NS] [-o json]

Prints what the controller's history keeps of <target> (${kinds[0]?.resource.kind === "EtcdOpsTask" ? "an Etcd's name" : "what the kind names as its target"}), one row per task
type: LAST SUCCESS, LAST FAILURE (a Failed task; a Rejected one is an outcome only), LAST OUTCOME,
its DURATION (creation to end) and ERROR CODE. The history outlives the tasks' TTL; it is read from
the ConfigMap opstask-history-<plural> of the namespace. Without <target>: every target (a TARGET
column first). Exit 1 when nothing is recorded.

  -o, --output json     the entries as JSON

Common options:
  --kubeconfig FILE     cluster to use (else $KUBECONFIG, else in a pod its service account, else ~/.kube/config)
  --context NAME        the kubeconfig context to use (default: its current-context)
  -n, --namespace NS    namespace (else the context's namespace, else default)
  --kind KIND           task kind: ${describeKinds(kinds)} (default ${kinds[0]?.resource.plural ?? ""})
  -h, --help            this text

Exit codes: 0 done, 1 nothing recorded or an API error (one line on stderr), 2 a bad argument or option.
`,
  interruptedExit: 130,
  prepare: async (argv, io) => {
    const usageHint = `'${io.program} history --help'`;
    const parsed = parseFlags(argv, flags, usageHint);
    if (parsed.positionals.length > 1)
      throw new OptionError(
        `expected at most one <target>, got ${parsed.positionals.length}; see ${usageHint}`,
      );
    const output = stringFlag(parsed.flags, "output");
    if (output !== undefined && output !== "json")
      throw new OptionError(
        `invalid value "${output}" for -o/--output: expected json (or leave it out for a table)`,
      );
    const wanted = parsed.positionals[0];
    const target = await resolveTarget(parsed.flags, io.env, kinds);
    const name = historyConfigMapName(target.kind.resource);
    const nothing = (why: string) =>
      Effect.sync(() => {
        io.stderr.write(`${io.program} history: ${why}\n`);
        return 1;
      });
    return {
      kind: target.kind,
      run: Effect.tryPromise({
        try: () =>
          target.client.request({
            method: "GET",
            path: apiPath({ group: "", version: "v1", plural: "configmaps" }, target.namespace, name),
          }),
        catch: (error) => error,
      }).pipe(
        Effect.map((response) => {
          const body = response.body as { data?: Record<string, unknown> } | undefined;
          const text = body?.data?.[entriesDataKey];
          return decodeEntries(typeof text === "string" ? text : undefined).entries;
        }),
        Effect.catch((error) =>
          error instanceof ApiCallError && error.statusCode === 404
            ? Effect.succeed<ReadonlyArray<HistoryEntry> | undefined>(undefined)
            : Effect.fail(error instanceof KubeError ? error : toKubeError(error)),
        ),
        Effect.flatMap((all) => {
          if (all === undefined)
            return nothing(
              `no history in namespace ${target.namespace} (ConfigMap ${name} not found: no ${target.kind.resource.kind} has finished here since history was turned on)`,
            );
          const entries = wanted === undefined ? all : all.filter((entry) => entry.target === wanted);
          if (entries.length === 0)
            return nothing(
              wanted === undefined
                ? `no history in namespace ${target.namespace}`
                : `no history of ${wanted} in namespace ${target.namespace} (targets recorded: ${
                    [...new Set(all.map((entry) => entry.target))].slice(0, 10).join(", ") || none
                  })`,
            );
          return Effect.sync(() => {
            io.stdout.write(
              output === "json"
                ? historyJson(entries)
                : historyTable(entries, Date.now(), wanted === undefined),
            );
            return 0;
          });
        }),
      ),
    };
  },
});
