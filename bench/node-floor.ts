/**
 * Node's own floor, measured beside the controllers: a process with the Deployment's environment
 * (NODE_OPTIONS, OPSTASK_V8_FLAGS, MALLOC_ARENA_MAX) that loads only `node:https` and sends `--requests`
 * GETs over one kept-alive connection to the same kube-apiserver, as the controller's client does.
 * No opstask code, no Effect, no XState: whatever the controller's resident memory is, it cannot be
 * below this process's. It prints one JSON line: its peak RSS (VmHWM) and its CPU per request.
 *
 *   node bench/node-floor.ts SERVER TOKEN CA_FILE [REQUESTS]   (run by bench/druid-side-by-side.ts)
 */
import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { applyV8Flags } from "../src/cli/v8-flags.ts";

const [server, token, caFile, count] = process.argv.slice(2);
if (server === undefined || token === undefined || caFile === undefined)
  throw new Error("usage: node bench/node-floor.ts SERVER TOKEN CA_FILE [REQUESTS]");
// OPSTASK_V8_FLAGS as the controller applies it at its start.
const v8Error = applyV8Flags(process.env);
if (v8Error !== undefined) throw new Error(v8Error);
const requests = Number(count ?? 200);
const agent = new Agent({ keepAlive: true, ca: readFileSync(caFile) });
const get = (): Promise<void> =>
  new Promise((resolve, reject) => {
    const outgoing = request(new URL("/api/v1/namespaces/default", server), {
      agent,
      headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
    });
    outgoing.once("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("end", () => {
        JSON.parse(Buffer.concat(chunks).toString("utf8"));
        resolve();
      });
    });
    outgoing.once("error", reject);
    outgoing.end();
  });

await get();
const before = process.cpuUsage();
for (let i = 0; i < requests; i += 1) await get();
const used = process.cpuUsage(before);
const peak = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
agent.destroy();
process.stdout.write(
  `${JSON.stringify({ peakRss: Number(peak) * 1024, cpuMsPerRequest: (used.user + used.system) / 1000 / requests })}\n`,
);
