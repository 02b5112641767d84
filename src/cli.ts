/**
 * `opstask/cli`: the task CLI for an operator's own kinds (`taskCli`, `cliKindOf`: get, describe, wait,
 * create and delete as `opstask` has them for EtcdOpsTask, plus the operator's own commands) and the
 * Stately inspector of the machine (`startStatelyInspector`; pass its `observer` to `runTaskController`).
 * A separate entry: these load CLI-only code and optional packages the library's entry never loads.
 */
export { scheduleCommand } from "./cli/schedule/schedule-command.ts";
export { type CliKind, type CliKindOptions, cliKindOf, type ManifestObject } from "./cli/task/cli-kind.ts";
export type { TaskCommand } from "./cli/task/command.ts";
export { type CliKinds, makeTaskCommands } from "./cli/task/index.ts";
export { type Output, processIo, type TaskIo } from "./cli/task/io.ts";
export { type CliCommand, kindCommands, type TaskCliOptions, taskCli } from "./cli/task/task-cli.ts";
export { startStatelyInspector } from "./inspect/stately-inspector.ts";
