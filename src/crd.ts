/**
 * `opstask/crd`: a task kind's CustomResourceDefinition from the Effect Schema its controller decodes
 * with. `taskCrd(kind, spec, options)` builds it (`opstask crd --module <file> --export <name>` prints
 * it as YAML); `celRule`, `withDefault` and `maxChars`/`minChars` put a CEL validation, a default or
 * a string length into both the decoder and the CRD; `structuralSchema` converts any schema to a
 * Kubernetes structural schema. A check with no exact CRD form is an error naming its field and the
 * fix, never left out silently, in a config member as at the top level. `scheduleCrd()` is the
 * TaskSchedule CRD, for a kind whose tasks schedules create.
 */
export type { CelRule, OpenApiSchema } from "./api/crd/openapi.ts";
export { crdYaml } from "./library/crd/crd-yaml.ts";
export { celRule, maxChars, minChars, withDefault } from "./library/crd/schema-annotations.ts";
export { type StructuralResult, structuralSchema } from "./library/crd/structural-schema.ts";
export {
  type CustomResourceDefinition,
  type PrinterColumn,
  type SpecOnly,
  type TaskCrdOptions,
  type TaskCrdResult,
  taskCrd,
} from "./library/crd/task-crd.ts";
export { type ScheduleCrdResult, scheduleCrd } from "./schedule/schedule-crd.ts";
