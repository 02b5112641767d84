/**
 * A task kind as the task CLI sees it: get, describe, wait, create and delete work for any `TaskKind` (the
 * flagship's EtcdOpsTask is one instance, src/cli/task/etcd-kind.ts; a kind defined with
 * `defineTaskKind` is another). The CLI reads a task through the kind's own decoder and facts, so the
 * admission group, the TTL and the status mean the same to the CLI as to the controller.
 */
import type { Vocabulary } from "../../machine/types.ts";
import { type ResourceRef, readFacts, type TaskFacts, type TaskKind } from "../../reconcile/task-kind.ts";

export interface CliKind {
  readonly resource: ResourceRef;
  readonly finalizer: string;
  readonly vocabulary: Vocabulary;
  readonly defaultTtlSeconds: number;
  /** Names `--kind` accepts besides the plural, the kind and `plural.group` (e.g. a short name). */
  readonly aliases: ReadonlyArray<string>;
  /** Header of the admission-group column (`ETCD` for EtcdOpsTask); default `GROUP`. */
  readonly groupHeader: string;
  /** The object's facts through the kind's decoder; undefined without readable metadata. */
  readonly facts: (object: unknown) => TaskFacts | undefined;
  /** What the task does, in a few words (describe's `Task:` line); undefined when it does not decode. */
  readonly summary: (object: unknown) => string | undefined;
  /**
   * What the controller would find wrong with a manifest once created (`create -f`): its decode
   * errors, one per field (`spec.config.ping.answer: required field is missing`); none when it decodes.
   */
  readonly check: (manifest: ManifestObject) => ReadonlyArray<string>;
}

/** A manifest as a user writes it: an object with metadata, nothing server-assigned yet. */
export interface ManifestObject {
  readonly metadata: { readonly [field: string]: unknown };
  readonly [field: string]: unknown;
}

/** Stand-ins for what the API server assigns on create, so the kind's decoder sees a stored object. */
const serverAssigned = {
  uid: "00000000-0000-0000-0000-000000000000",
  resourceVersion: "1",
  generation: 1,
  creationTimestamp: "2026-01-01T00:00:00Z",
};

const storedForm = (manifest: ManifestObject, namespace: string): object => {
  const { metadata } = manifest;
  const generated = typeof metadata.generateName === "string" ? `${metadata.generateName}x` : undefined;
  return {
    ...manifest,
    metadata: {
      ...serverAssigned,
      namespace,
      ...metadata,
      ...(metadata.name === undefined && generated !== undefined ? { name: generated } : {}),
    },
  };
};

export interface CliKindOptions<Task> {
  /** Default: the kind's short names (`defineTaskKind`'s short form). */
  readonly aliases?: ReadonlyArray<string>;
  readonly groupHeader?: string;
  /** Default: the config member that selects the handler. */
  readonly summary?: (task: Task) => string;
}

/** The CLI's view of `kind`. */
export const cliKindOf = <Task>(
  kind: TaskKind<Task> & { readonly shortNames?: ReadonlyArray<string> },
  options: CliKindOptions<Task> = {},
): CliKind => ({
  resource: kind.resource,
  finalizer: kind.finalizer,
  vocabulary: kind.vocabulary,
  defaultTtlSeconds: kind.defaultTtlSeconds,
  aliases: options.aliases ?? kind.shortNames ?? [],
  groupHeader: options.groupHeader ?? "GROUP",
  facts: (object) => readFacts(kind, object),
  summary: (object) => {
    const decoded = kind.decode(object);
    if (!decoded.ok) return undefined;
    return options.summary?.(decoded.task) ?? kind.facts(decoded.task).member;
  },
  check: (manifest) => {
    const namespace =
      typeof manifest.metadata.namespace === "string" ? manifest.metadata.namespace : "default";
    const decoded = kind.decode(storedForm(manifest, namespace));
    return decoded.ok ? [] : decoded.failure.errors;
  },
});

/** `etcdopstask.druid.gardener.cloud`: how kubectl names the resource (`-o name`, delete messages). */
export const qualifiedName = (kind: CliKind): string =>
  `${kind.resource.kind.toLowerCase()}.${kind.resource.group}`;

/** Every name `--kind` accepts for `kind`, lower case. */
const namesOf = (kind: CliKind): ReadonlyArray<string> => {
  const { plural, group } = kind.resource;
  const singular = kind.resource.kind.toLowerCase();
  return [plural, singular, `${plural}.${group}`, `${singular}.${group}`, ...kind.aliases].map((name) =>
    name.toLowerCase(),
  );
};

/** The kind `name` names among `kinds` (case-insensitive), or undefined. */
export const findKind = (kinds: ReadonlyArray<CliKind>, name: string): CliKind | undefined =>
  kinds.find((kind) => namesOf(kind).includes(name.toLowerCase()));

/** `etcdopstasks (EtcdOpsTask), …`, for errors and help. */
export const describeKinds = (kinds: ReadonlyArray<CliKind>): string =>
  kinds.map((kind) => `${kind.resource.plural} (${kind.resource.kind})`).join(", ");

/** The admission-group column of `kinds` for help: `GROUP`, or `ETCD for etcdopstasks, TARGET for probes`. */
export const describeGroupHeaders = (kinds: ReadonlyArray<CliKind>): string => {
  const headers = new Set(kinds.map((kind) => kind.groupHeader));
  return headers.size <= 1
    ? [...headers].join("")
    : kinds.map((kind) => `${kind.groupHeader} for ${kind.resource.plural}`).join(", ");
};
