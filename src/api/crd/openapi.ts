/**
 * The subset of OpenAPI v3 (as CustomResourceDefinitions use it) that opstask's CRD fragments and the
 * CRD tests need, as a type and as a schema to decode a CRD's `openAPIV3Schema` read from YAML.
 */
import * as Schema from "effect/Schema";

export interface CelRule {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly reason?: string;
  readonly fieldPath?: string;
  readonly optionalOldSelf?: boolean;
}

export interface OpenApiSchema {
  readonly type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  readonly description?: string;
  readonly properties?: { readonly [name: string]: OpenApiSchema };
  readonly required?: ReadonlyArray<string>;
  readonly additionalProperties?: OpenApiSchema | boolean;
  readonly items?: OpenApiSchema;
  readonly anyOf?: ReadonlyArray<OpenApiSchema>;
  readonly enum?: ReadonlyArray<unknown>;
  readonly default?: unknown;
  readonly format?: string;
  readonly pattern?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly multipleOf?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly nullable?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly "x-kubernetes-validations"?: ReadonlyArray<CelRule>;
  readonly "x-kubernetes-int-or-string"?: boolean;
  readonly "x-kubernetes-preserve-unknown-fields"?: boolean;
  readonly "x-kubernetes-list-type"?: string;
  readonly "x-kubernetes-list-map-keys"?: ReadonlyArray<string>;
  readonly "x-kubernetes-map-type"?: string;
}

const CelRuleSchema = Schema.Struct({
  rule: Schema.String,
  message: Schema.optionalKey(Schema.String),
  messageExpression: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String),
  fieldPath: Schema.optionalKey(Schema.String),
  optionalOldSelf: Schema.optionalKey(Schema.Boolean),
});

const OpenApi = Schema.suspend((): Schema.Codec<OpenApiSchema> => OpenApiSchemaSchema);

export const OpenApiSchemaSchema: Schema.Codec<OpenApiSchema> = Schema.Struct({
  type: Schema.optionalKey(Schema.Literals(["object", "array", "string", "integer", "number", "boolean"])),
  description: Schema.optionalKey(Schema.String),
  properties: Schema.optionalKey(Schema.Record(Schema.String, OpenApi)),
  required: Schema.optionalKey(Schema.Array(Schema.String)),
  additionalProperties: Schema.optionalKey(Schema.Union([OpenApi, Schema.Boolean])),
  items: Schema.optionalKey(OpenApi),
  anyOf: Schema.optionalKey(Schema.Array(OpenApi)),
  enum: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  default: Schema.optionalKey(Schema.Unknown),
  format: Schema.optionalKey(Schema.String),
  pattern: Schema.optionalKey(Schema.String),
  minimum: Schema.optionalKey(Schema.Number),
  maximum: Schema.optionalKey(Schema.Number),
  multipleOf: Schema.optionalKey(Schema.Number),
  exclusiveMinimum: Schema.optionalKey(Schema.Boolean),
  exclusiveMaximum: Schema.optionalKey(Schema.Boolean),
  nullable: Schema.optionalKey(Schema.Boolean),
  minLength: Schema.optionalKey(Schema.Number),
  maxLength: Schema.optionalKey(Schema.Number),
  minItems: Schema.optionalKey(Schema.Number),
  maxItems: Schema.optionalKey(Schema.Number),
  minProperties: Schema.optionalKey(Schema.Number),
  maxProperties: Schema.optionalKey(Schema.Number),
  "x-kubernetes-validations": Schema.optionalKey(Schema.Array(CelRuleSchema)),
  "x-kubernetes-int-or-string": Schema.optionalKey(Schema.Boolean),
  "x-kubernetes-preserve-unknown-fields": Schema.optionalKey(Schema.Boolean),
  "x-kubernetes-list-type": Schema.optionalKey(Schema.String),
  "x-kubernetes-list-map-keys": Schema.optionalKey(Schema.Array(Schema.String)),
  "x-kubernetes-map-type": Schema.optionalKey(Schema.String),
});
