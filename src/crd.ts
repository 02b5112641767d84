/**
 * `opstask/crd`: a task kind's CustomResourceDefinition from the Effect Schema its controller decodes
 * with. `taskCrd(kind, spec, options)` builds it (`opstask crd --module <file> --export <name>` prints
 * it as YAML); `celRule` and `withDefault` put a CEL validation or a default into both the decoder and
 * the CRD; `structuralSchema` converts any schema to a Kubernetes structural schema. A check with no
 * exact CRD form is an error naming its field and the fix, never left out silently.
 */
export type { CelRule, OpenApiSchema } from "./api/crd/openapi.ts";
export { crdYaml } from "./library/crd/crd-yaml.ts";
export { celRule, withDefault } from "./library/crd/schema-annotations.ts";
export { type StructuralResult, structuralSchema } from "./library/crd/structural-schema.ts";
export {
  type CustomResourceDefinition,
  type PrinterColumn,
  type SpecOnly,
  type TaskCrdOptions,
  type TaskCrdResult,
  taskCrd,
} from "./library/crd/task-crd.ts";
