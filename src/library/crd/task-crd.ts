/**
 * `taskCrd`: the CustomResourceDefinition of a task kind, built from the kind's names and the Effect
 * Schema of its `spec` (the schema the controller decodes with, so the two cannot drift):
 *
 * - `spec` from the schema (config union members with exactly-one validation, defaults, CEL rules);
 * - every spec field immutable (`self == oldSelf`, one rule per field as etcd-druid's CRD has it): a
 *   task is a one-off request, and editing it mid-run would make its status describe another task;
 * - `status` in opstask's (and druid's EtcdOpsTask's) status shape, as the `status` subresource, so
 *   only the controller writes it, plus the kind's `result` and `conditions` when it has them;
 * - printer columns State, the kind's own columns, Age, and Phase (wide).
 */
import type * as Schema from "effect/Schema";
import type { OpenApiSchema } from "../../api/crd/openapi.ts";
import { TaskStatusSchema } from "../../api/status-schema.ts";
import type { TaskKind } from "../../reconcile/task-kind.ts";
import { structuralSchema } from "./structural-schema.ts";

export interface PrinterColumn {
  readonly name: string;
  readonly type: "string" | "integer" | "number" | "boolean" | "date";
  readonly jsonPath: string;
  readonly description?: string;
  /** 0 shows in `kubectl get`; 1 only with `-o wide`. */
  readonly priority?: number;
}

export interface TaskCrdOptions {
  /** The description of the whole object (`kubectl explain <kind>`). */
  readonly description?: string;
  readonly singular?: string;
  readonly shortNames?: ReadonlyArray<string>;
  readonly categories?: ReadonlyArray<string>;
  /** Columns shown after State (e.g. the admission group's field). */
  readonly printerColumns?: ReadonlyArray<PrinterColumn>;
  /** Spec fields that may change after creation (default: none; a task is immutable). */
  readonly mutableFields?: ReadonlyArray<string>;
}

export interface CustomResourceDefinition {
  readonly apiVersion: "apiextensions.k8s.io/v1";
  readonly kind: "CustomResourceDefinition";
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly group: string;
    readonly names: {
      readonly kind: string;
      readonly listKind: string;
      readonly plural: string;
      readonly singular: string;
      readonly shortNames?: ReadonlyArray<string>;
      readonly categories?: ReadonlyArray<string>;
    };
    readonly scope: "Namespaced";
    readonly versions: ReadonlyArray<{
      readonly name: string;
      readonly served: boolean;
      readonly storage: boolean;
      readonly subresources: { readonly status: Record<string, never> };
      readonly additionalPrinterColumns: ReadonlyArray<PrinterColumn>;
      readonly schema: { readonly openAPIV3Schema: OpenApiSchema };
    }>;
  };
}

export type TaskCrdResult =
  | { readonly ok: true; readonly crd: CustomResourceDefinition }
  | { readonly ok: false; readonly errors: ReadonlyArray<string> };

const statusDescription =
  "Written by the controller only: the task's lifecycle state, last operation and errors.";

/** `metav1.Condition` as Kubernetes' own CRDs declare it, a list keyed by type. */
const conditionsSchema: OpenApiSchema = {
  description: "Standard conditions, written with the final state (kubectl wait --for=condition=…).",
  type: "array",
  maxItems: 8,
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
  items: {
    type: "object",
    required: ["type", "status", "lastTransitionTime", "reason", "message"],
    properties: {
      type: { type: "string", maxLength: 316 },
      status: { type: "string", enum: ["True", "False", "Unknown"] },
      observedGeneration: { type: "integer", format: "int64", minimum: 0 },
      lastTransitionTime: { type: "string", format: "date-time" },
      reason: { type: "string", minLength: 1, maxLength: 1024 },
      message: { type: "string", maxLength: 32768 },
    },
  },
};

/** Each spec field gets druid's transition rule, unless it is listed as mutable. */
const immutableFields = (spec: OpenApiSchema, mutable: ReadonlyArray<string>): OpenApiSchema => {
  const properties = Object.fromEntries(
    Object.entries(spec.properties ?? {}).map(([name, field]) => [
      name,
      mutable.includes(name)
        ? field
        : {
            ...field,
            "x-kubernetes-validations": [
              ...(field["x-kubernetes-validations"] ?? []),
              { message: `${name} is immutable`, rule: "self == oldSelf" },
            ],
          },
    ]),
  );
  return { ...spec, properties };
};

/** The fields of a whole task object: a schema with one of them is not a `spec`. */
const objectFields = ["metadata", "spec", "apiVersion"] as const;

/**
 * `spec`, unless its decoded type has a whole object's fields; then a type error whose text says the
 * fix (the mistake `taskCrd(kind, MyTaskSchema)` would otherwise emit a CRD nested one level too deep).
 */
export type SpecOnly<S extends Schema.Top> =
  Extract<keyof S["Type"], (typeof objectFields)[number]> extends never
    ? S
    : "taskCrd takes the spec's schema (MyTaskSchema.fields.spec), not the whole task object's";

const wholeObjectError = (converted: OpenApiSchema): ReadonlyArray<string> => {
  const found = objectFields.filter((field) => converted.properties?.[field] !== undefined);
  return found.length === 0
    ? []
    : [
        `spec: the schema has ${found.join(", ")}, so it is a whole task object's; pass its spec schema (MyTaskSchema.fields.spec)`,
      ];
};

type CrdKind = Pick<TaskKind<unknown>, "resource" | "conditions" | "resultSchema">;

/** A kind that carries its spec schema and short names (`defineTaskKind`'s short form). */
export interface CrdKindWithSpec extends CrdKind {
  readonly specSchema: Schema.Top;
  readonly shortNames?: ReadonlyArray<string>;
}

/**
 * The CRD of `kind`: a short-form kind as is (its spec schema and short names are its own), or any
 * kind with the schema of its objects' `spec` (e.g. `MyTaskSchema.fields.spec`).
 */
export function taskCrd(kind: CrdKindWithSpec, options?: TaskCrdOptions): TaskCrdResult;
export function taskCrd<S extends Schema.Top>(
  kind: CrdKind,
  spec: S & SpecOnly<S>,
  options?: TaskCrdOptions,
): TaskCrdResult;
export function taskCrd(
  kind: CrdKind | CrdKindWithSpec,
  specOrOptions?: Schema.Top | TaskCrdOptions,
  maybeOptions?: TaskCrdOptions,
): TaskCrdResult {
  // A schema has an `ast`; options never do.
  if (specOrOptions !== undefined && "ast" in specOrOptions)
    return crdOf(kind, specOrOptions, maybeOptions ?? {});
  const options = specOrOptions ?? {};
  if (!("specSchema" in kind))
    return { ok: false, errors: ["spec: the kind has no spec schema; pass it (taskCrd(kind, MySpec))"] };
  const shortNames = options.shortNames ?? kind.shortNames;
  return crdOf(kind, kind.specSchema, { ...options, ...(shortNames === undefined ? {} : { shortNames }) });
}

const crdOf = (kind: CrdKind, spec: Schema.Top, options: TaskCrdOptions): TaskCrdResult => {
  const specSchema = structuralSchema(spec, "spec");
  if (specSchema.ok && wholeObjectError(specSchema.schema).length > 0)
    return { ok: false, errors: wholeObjectError(specSchema.schema) };
  const statusSchema = structuralSchema(TaskStatusSchema, "status");
  const resultSchema =
    kind.resultSchema === undefined ? undefined : structuralSchema(kind.resultSchema, "status.result");
  const errors = [
    ...(specSchema.ok ? [] : specSchema.errors),
    ...(statusSchema.ok ? [] : statusSchema.errors),
    ...(resultSchema === undefined || resultSchema.ok ? [] : resultSchema.errors),
  ];
  if (!specSchema.ok || !statusSchema.ok || (resultSchema !== undefined && !resultSchema.ok))
    return { ok: false, errors };
  const unknownMutable = (options.mutableFields ?? []).filter(
    (name) => !(name in (specSchema.schema.properties ?? {})),
  );
  if (unknownMutable.length > 0) {
    return { ok: false, errors: unknownMutable.map((name) => `mutableFields: spec has no field ${name}`) };
  }
  const { group, version, kind: kindName, plural } = kind.resource;
  const openAPIV3Schema: OpenApiSchema = {
    ...(options.description === undefined ? {} : { description: options.description }),
    type: "object",
    required: ["spec"],
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
      spec: immutableFields(specSchema.schema, options.mutableFields ?? []),
      status: {
        description: statusDescription,
        ...statusSchema.schema,
        properties: {
          ...statusSchema.schema.properties,
          ...(resultSchema === undefined ? {} : { result: resultSchema.schema }),
          ...(kind.conditions === undefined ? {} : { conditions: conditionsSchema }),
        },
      },
    },
  };
  return {
    ok: true,
    crd: {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        names: {
          kind: kindName,
          listKind: `${kindName}List`,
          plural,
          singular: options.singular ?? kindName.toLowerCase(),
          ...(options.shortNames === undefined ? {} : { shortNames: options.shortNames }),
          ...(options.categories === undefined ? {} : { categories: options.categories }),
        },
        scope: "Namespaced",
        versions: [
          {
            name: version,
            served: true,
            storage: true,
            subresources: { status: {} },
            additionalPrinterColumns: [
              { name: "State", type: "string", jsonPath: ".status.state" },
              ...(options.printerColumns ?? []),
              { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
              { name: "Phase", type: "string", jsonPath: ".status.lastOperation.type", priority: 1 },
            ],
            schema: { openAPIV3Schema },
          },
        ],
      },
    },
  };
};
