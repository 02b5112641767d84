/**
 * Step 6 of docs/library.md: kubectl-style commands for Greetings. `node cli.ts get`,
 * `node cli.ts describe hi`, `node cli.ts wait hi`, `node cli.ts delete hi`
 * read the tasks through the kind's own decoder, as `opstask` does for EtcdOpsTask.
 */
import { cliKindOf, taskCli } from "opstask/cli";
import { greetingKind } from "./greeting.ts";

// `--kind greet` works too: the kind's short name.
const greetings = cliKindOf(greetingKind);
// `program` is how the usage texts and hints name this CLI (default: the script's file name).
process.exitCode = await taskCli([greetings], { program: "node cli.ts" })(process.argv.slice(2));
