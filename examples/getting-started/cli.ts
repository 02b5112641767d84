/**
 * Step 5 of docs/library.md: kubectl-style commands for Greetings. `node cli.ts get`,
 * `node cli.ts describe hi`, `node cli.ts wait hi`, `node cli.ts delete hi`
 * read the tasks through the kind's own decoder, as `opstask` does for EtcdOpsTask.
 */
import { cliKindOf, taskCli } from "opstask/cli";
import { greetingKind } from "./greeting.ts";

const greetings = cliKindOf(greetingKind, { aliases: ["greet"] });
process.exitCode = await taskCli([greetings])(process.argv.slice(2));
