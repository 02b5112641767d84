/**
 * Where history lives: one ConfigMap per namespace and task kind (`opstask-history-<plural>`, e.g.
 * `opstask-history-etcdopstasks`), beside the targets it describes. Every write is a PUT carrying the
 * resourceVersion it read (optimistic concurrency; a create when there is none), so two writers never
 * lose each other's entries: the loser of a conflict reads again and merges (task-history.ts).
 *
 * Answers are values, never thrown: `Written`, `Conflict` (read again), or `Failed` (retry later).
 */
import { apiPath } from "../kube/api-path.ts";
import { ApiCallError, type KubeClient } from "../kube/kube-client.ts";
import type { ResourceRef } from "../reconcile/task-kind.ts";
import {
  type DecodedEntries,
  decodeEntries,
  entriesDataKey,
  type HistoryLimits,
  withinLimits,
} from "./history-entry.ts";

const configMaps = { group: "", version: "v1", plural: "configmaps" } as const;

/** Label of every history ConfigMap; its value is the task kind's plural. */
export const historyLabel = "opstask.dev/history-of";

/** The history ConfigMap's name of a task kind: `opstask-history-<plural>`. */
export const historyConfigMapName = (resource: Pick<ResourceRef, "plural">): string =>
  `opstask-history-${resource.plural}`;

export interface StoredHistory extends DecodedEntries {
  readonly namespace: string;
  readonly resourceVersion: string;
  /**
   * Set when the entries' text was longer than `maxBytes`, which this controller never writes: it was
   * not decoded (`entries` is empty), and the next write replaces it.
   */
  readonly oversizedBytes?: number;
}

/** What a read keeps: the bounds this controller writes within, and the clock of "in the future". */
export interface ReadBounds {
  readonly limits: HistoryLimits;
  readonly now: number;
}

export type WriteAnswer =
  | { readonly _tag: "Written"; readonly resourceVersion: string }
  | { readonly _tag: "Conflict" }
  | { readonly _tag: "Failed"; readonly cause: string };

export type ReadAnswer =
  | { readonly _tag: "Found"; readonly history: StoredHistory }
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Failed"; readonly cause: string };

export type ListAnswer =
  | { readonly _tag: "Listed"; readonly histories: ReadonlyArray<StoredHistory> }
  | { readonly _tag: "Failed"; readonly cause: string };

const causeOf = (error: unknown): string =>
  error instanceof ApiCallError ? `${error.statusCode}: ${error.message}` : String(error);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The ConfigMap's history within `bounds`, applied before anything is learnt from it: a text longer
 * than `maxBytes` is not decoded at all, entries beyond `maxEntries` (the least useful) are dropped.
 */
const historyOf = (object: unknown, bounds: ReadBounds): StoredHistory | undefined => {
  if (!isRecord(object) || !isRecord(object.metadata)) return undefined;
  const { namespace, resourceVersion } = object.metadata;
  if (typeof namespace !== "string" || typeof resourceVersion !== "string") return undefined;
  const data = isRecord(object.data) ? object.data[entriesDataKey] : undefined;
  const text = typeof data === "string" ? data : undefined;
  const bytes = text === undefined ? 0 : Buffer.byteLength(text);
  if (bytes > bounds.limits.maxBytes)
    return { namespace, resourceVersion, entries: [], problems: [], oversizedBytes: bytes };
  const decoded = decodeEntries(text, bounds.now);
  const bounded = withinLimits(decoded.entries, bounds.limits);
  return {
    namespace,
    resourceVersion,
    entries: bounded.entries,
    problems:
      bounded.evicted.length === 0
        ? decoded.problems
        : [
            ...decoded.problems,
            `${bounded.evicted.length} entries beyond history.maxEntries (${bounds.limits.maxEntries}) or maxBytes skipped`,
          ],
  };
};

export interface HistoryLocation {
  readonly namespace: string;
  readonly name: string;
  /** The task kind's plural, the value of `historyLabel`. */
  readonly plural: string;
}

export const readHistory = async (
  client: KubeClient,
  where: HistoryLocation,
  bounds: ReadBounds,
  signal?: AbortSignal,
): Promise<ReadAnswer> => {
  try {
    const response = await client.request(
      { method: "GET", path: apiPath(configMaps, where.namespace, where.name) },
      signal,
    );
    const history = historyOf(response.body, bounds);
    return history === undefined
      ? { _tag: "Failed", cause: "the answer is not a ConfigMap" }
      : { _tag: "Found", history };
  } catch (error) {
    if (error instanceof ApiCallError && error.statusCode === 404) return { _tag: "Absent" };
    return { _tag: "Failed", cause: causeOf(error) };
  }
};

/** ConfigMaps per LIST page, and the most bytes a page of several is read to. */
const listPageSize = 10;
const listPageBytes = 4 * 1024 * 1024;

/**
 * Every history ConfigMap of the kind, in one namespace or all: a LIST by name
 * (`fieldSelector=metadata.name=…`), which RBAC can grant for that one name (`resourceNames`), so the
 * controller needs no right to read other ConfigMaps. Objects without the kind's label are skipped.
 * Paged: a page of several is read to `listPageBytes` at most, and one over it is asked again one
 * ConfigMap at a time (one object is bounded by the apiserver), so memory never grows with how many
 * namespaces hold a large one.
 */
export const listHistories = async (
  client: KubeClient,
  of: Pick<HistoryLocation, "name" | "plural">,
  namespace: string | undefined,
  bounds: ReadBounds,
  signal?: AbortSignal,
): Promise<ListAnswer> => {
  try {
    const histories: StoredHistory[] = [];
    let continueToken: string | undefined;
    let limit = listPageSize;
    for (;;) {
      const response = await client.request(
        {
          method: "GET",
          path: apiPath(configMaps, namespace),
          query: { fieldSelector: `metadata.name=${of.name}`, limit, continue: continueToken },
          ...(limit > 1 ? { maxAnswerBytes: listPageBytes } : {}),
        },
        signal,
      );
      if (response.cutAt !== undefined) {
        limit = 1;
        continue;
      }
      const body = isRecord(response.body) ? response.body : {};
      const items = Array.isArray(body.items) ? body.items : [];
      for (const item of items) {
        const labels = isRecord(item) && isRecord(item.metadata) ? item.metadata.labels : undefined;
        if (!isRecord(labels) || labels[historyLabel] !== of.plural) continue;
        const history = historyOf(item, bounds);
        if (history !== undefined) histories.push(history);
      }
      const next = isRecord(body.metadata) ? body.metadata.continue : undefined;
      if (typeof next !== "string" || next === "") break;
      continueToken = next;
    }
    return { _tag: "Listed", histories };
  } catch (error) {
    return { _tag: "Failed", cause: causeOf(error) };
  }
};

/** The answer's resourceVersion: a written ConfigMap's entries are what was sent, not decoded again. */
const writtenVersion = (object: unknown): string | undefined => {
  const metadata = isRecord(object) ? object.metadata : undefined;
  const version = isRecord(metadata) ? metadata.resourceVersion : undefined;
  return typeof version === "string" ? version : undefined;
};

/**
 * Writes `encoded` (`encodeEntries`' text, e.g. `mergeOutcomes(…).encoded`) as the whole history: a
 * PUT with `resourceVersion` (the version read), or a POST when `resourceVersion` is undefined (none
 * read). 409 (changed meanwhile, or created meanwhile) is a `Conflict`.
 */
export const writeHistory = async (
  client: KubeClient,
  where: HistoryLocation,
  resourceVersion: string | undefined,
  encoded: string,
  signal?: AbortSignal,
): Promise<WriteAnswer> => {
  const body = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: where.name,
      namespace: where.namespace,
      labels: { [historyLabel]: where.plural, "app.kubernetes.io/managed-by": "opstask" },
      annotations: {
        "opstask.dev/history":
          "last outcome per target and task type, kept after the tasks' TTL (docs/history-and-alerts.md)",
      },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    data: { [entriesDataKey]: encoded },
  };
  try {
    const response = await client.request(
      resourceVersion === undefined
        ? { method: "POST", path: apiPath(configMaps, where.namespace), body }
        : { method: "PUT", path: apiPath(configMaps, where.namespace, where.name), body },
      signal,
    );
    const written = writtenVersion(response.body);
    return written === undefined
      ? { _tag: "Failed", cause: "the answer is not a ConfigMap" }
      : { _tag: "Written", resourceVersion: written };
  } catch (error) {
    if (error instanceof ApiCallError && error.statusCode === 409) return { _tag: "Conflict" };
    return { _tag: "Failed", cause: causeOf(error) };
  }
};
