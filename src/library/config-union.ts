/**
 * A task's config as a union with exactly one member, `{ <member>: <body> }` on the wire (the shape of
 * druid's `spec.config`), decoded to `{ kind: <member>, ...body }`. The member names the handler.
 *
 * A member nobody declared decodes too, as `{ kind: "unsupported", member, value }`, so that such a
 * task is Rejected with ERR_UNSUPPORTED_TASK and stays deletable instead of failing to decode (a CRD
 * that lists its members rejects it earlier; an older controller meeting a newer member must not
 * wedge). A declared member with an invalid body fails with errors under `<member>.<field>`.
 */
import * as Effect from "effect/Effect";
import type * as JsonSchema from "effect/JsonSchema";
import * as Schema from "effect/Schema";
import type * as SchemaAST from "effect/SchemaAST";
import * as SchemaIssue from "effect/SchemaIssue";
import * as SchemaParser from "effect/SchemaParser";
import * as SchemaTransformation from "effect/SchemaTransformation";

/** A config member without a handler in this build, kept as read so it can be reported and re-encoded. */
export interface UnsupportedConfig {
  readonly kind: "unsupported";
  readonly member: string;
  readonly value: unknown;
}

/** Member name → schema of its body (an object; it must not have a field named `kind`). */
export type ConfigMembers = {
  readonly [member: string]: Schema.ConstraintCodec<object, unknown, never, never>;
};

/** The decoded config: one `kind`-tagged variant per member, or `UnsupportedConfig`. */
export type ConfigOf<M extends ConfigMembers> =
  | { readonly [K in keyof M & string]: { readonly kind: K } & M[K]["Type"] }[keyof M & string]
  | UnsupportedConfig;

type WireConfig = { readonly [member: string]: unknown };
type LooseConfig = { readonly kind: string; readonly [field: string]: unknown };

const isLooseConfig = (input: unknown): input is LooseConfig =>
  typeof input === "object" && input !== null && typeof (input as { kind?: unknown }).kind === "string";

/** The member a decoded config selects: its `kind`, or the unknown member's name. */
export const configMember = (config: { readonly kind: string }): string =>
  config.kind === "unsupported" && "member" in config && typeof config.member === "string"
    ? config.member
    : config.kind;

/**
 * The annotation of the wire form's check that holds the members, so that the CRD generator can walk
 * each member's own schema (its checks reach the CRD or are refused, as the top level's are).
 */
export const configMembersAnnotation = "opstask/configMembers";

/** The members a check of a config union carries, if `annotations` are such a check's. */
export const configMembersOf = (
  annotations: Readonly<Record<string, unknown>> | undefined,
): ConfigMembers | undefined => {
  const members = annotations?.[configMembersAnnotation];
  return typeof members === "object" && members !== null ? (members as ConfigMembers) : undefined;
};

/**
 * The JSON Schema of the wire form: each member as a property, exactly one present (a CRD's
 * `minProperties`/`maxProperties`, as druid's `spec.config`). Only JSON Schema generation reads it;
 * the decoder enforces the same rule with a message naming the members.
 */
const membersJsonSchema = (members: ConfigMembers) =>
  Schema.makeFilter<WireConfig>(() => undefined, {
    [configMembersAnnotation]: members,
    toJsonSchema: () => {
      const $defs: Record<string, JsonSchema.JsonSchema> = {};
      const properties: Record<string, JsonSchema.JsonSchema> = {};
      for (const [name, schema] of Object.entries(members)) {
        const document = Schema.toJsonSchemaDocument(schema, {
          includeAnnotationKey: (key) => key.startsWith("x-kubernetes-"),
        });
        properties[name] = document.schema;
        Object.assign($defs, document.definitions);
      }
      return {
        properties,
        minProperties: 1,
        maxProperties: 1,
        ...(Object.keys($defs).length > 0 ? { $defs } : {}),
      };
    },
  });

/**
 * The schema of a one-member config union; use it as `spec.config` in the task's schema. The
 * `description` is the CRD's description of `spec.config`.
 */
export const configUnion = <const M extends ConfigMembers>(
  members: M,
  annotations?: { readonly description?: string },
) => {
  const known = (member: string) => (Object.hasOwn(members, member) ? members[member] : undefined);
  const expected = `one of ${Object.keys(members).sort().join(", ")}`;
  // One parser per member, made once: making it is most of the cost of a decode.
  const parsers = new Map(
    Object.entries(members).map(([member, schema]) => [member, SchemaParser.decodeUnknownEffect(schema)]),
  );

  const decode = (
    raw: WireConfig,
    options: SchemaAST.ParseOptions,
  ): Effect.Effect<ConfigOf<M>, SchemaIssue.Issue> => {
    const names = Object.keys(raw);
    const [member] = names;
    if (member === undefined || names.length > 1) {
      const got = member === undefined ? "none" : names.join(", ");
      return Effect.fail(
        new SchemaIssue.InvalidValue(
          { message: `expected exactly one member (${expected}), got ${got}` },
          raw,
          options,
        ),
      );
    }
    const body = raw[member];
    const parse = Object.hasOwn(members, member) ? parsers.get(member) : undefined;
    if (parse === undefined) {
      const unsupported: UnsupportedConfig = { kind: "unsupported", member, value: body };
      return Effect.succeed(unsupported);
    }
    return parse(body, options).pipe(
      // The variant is built from the member's own schema; TypeScript cannot follow `member` to `M[K]`.
      Effect.map((decoded) => ({ ...decoded, kind: member }) as ConfigOf<M>),
      Effect.mapError((issue) => new SchemaIssue.Pointer([member], issue)),
    );
  };

  const encode = (
    config: ConfigOf<M>,
    options: SchemaAST.ParseOptions,
  ): Effect.Effect<WireConfig, SchemaIssue.Issue> => {
    if (config.kind === "unsupported" && "member" in config && typeof config.member === "string") {
      return Effect.succeed({ [config.member]: config.value });
    }
    const { kind, ...body } = config as LooseConfig;
    const schema = known(kind);
    if (schema === undefined) {
      return Effect.fail(
        new SchemaIssue.InvalidValue({ message: `unknown member ${kind}` }, config, options),
      );
    }
    return SchemaParser.encodeUnknownEffect(schema)(body, options).pipe(
      Effect.map((encoded) => ({ [kind]: encoded })),
      Effect.mapError((issue) => new SchemaIssue.Pointer([kind], issue)),
    );
  };

  const decoded = Schema.declare((input: unknown): input is ConfigOf<M> => isLooseConfig(input), {
    expected: `a config (${expected})`,
  });
  return Schema.Record(Schema.String, Schema.Unknown)
    .annotate({ ...annotations })
    .check(membersJsonSchema(members))
    .pipe(Schema.decodeTo(decoded, SchemaTransformation.transformEffect({ decode, encode })));
};
