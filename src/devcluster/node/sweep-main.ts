// Cleans up after local nodes whose process died (run by sweep-watchdog.ts; also by hand:
// `node src/devcluster/node/sweep-main.ts`).
import { sweepDeadNodes } from "./teardown.ts";

const problems = await sweepDeadNodes((line) => process.stderr.write(`${line}\n`));
for (const problem of problems) process.stderr.write(`local node: clean-up left: ${problem}\n`);
process.exitCode = problems.length === 0 ? 0 : 1;
