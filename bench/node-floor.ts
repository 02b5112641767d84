/**
 * Node's own floor, measured beside the controllers: a process with the Deployment's environment
 * (NODE_OPTIONS, OPSTASK_V8_FLAGS, MALLOC_ARENA_MAX) that sends `REQUESTS` GETs over one kept-alive
 * connection to the same kube-apiserver, as the controller's client does. No opstask code, no XState:
 * whatever the controller's resident memory is, it cannot be below this process's. MODE says what else
 * it does first:
 *
 * - `https` (default): loads only `node:https`;
 * - `effect`: also loads and runs the Effect modules the controller builds on (Effect, Schema, Stream,
 *   Queue, Layer), the least a controller written with Effect holds;
 * - `client-node`: also loads @kubernetes/client-node and reads one object through it, the least a
 *   controller written with the common TypeScript client holds;
 * - `list:PATH`: LISTs PATH in pages of 500, parses each page and keeps every item in a Map: the least
 *   a takeover of those objects costs (its CPU counts from the process's start, as the takeover's does).
 *
 * It prints one JSON line: its peak RSS (VmHWM), its RSS at the end, its CPU per GET and in all.
 *
 *   node bench/node-floor.ts SERVER TOKEN CA_FILE [REQUESTS] [MODE]   (run by bench/druid-side-by-side.ts)
 */
import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { applyV8Flags } from "../src/cli/v8-flags.ts";

const [server, token, caFile, count, mode = "https"] = process.argv.slice(2);
if (server === undefined || token === undefined || caFile === undefined)
  throw new Error("usage: node bench/node-floor.ts SERVER TOKEN CA_FILE [REQUESTS] [MODE]");
// OPSTASK_V8_FLAGS as the controller applies it at its start.
const v8Error = applyV8Flags(process.env);
if (v8Error !== undefined) throw new Error(v8Error);
const requests = Number(count ?? 200);
const ca = readFileSync(caFile);
const agent = new Agent({ keepAlive: true, ca });
const getJson = (path: string): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const outgoing = request(new URL(path, server), {
      agent,
      headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
    });
    outgoing.once("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("end", () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        } catch (error) {
          reject(error);
        }
      });
    });
    outgoing.once("error", reject);
    outgoing.end();
  });
const get = async (): Promise<void> => {
  await getJson("/api/v1/namespaces/default");
};

const withEffect = async (): Promise<void> => {
  const [Effect, Schema, Stream, Queue, Layer] = await Promise.all([
    import("effect/Effect"),
    import("effect/Schema"),
    import("effect/Stream"),
    import("effect/Queue"),
    import("effect/Layer"),
  ]);
  const Named = Schema.Struct({ metadata: Schema.Struct({ name: Schema.String }) });
  const program = Effect.gen(function* () {
    const queue = yield* Queue.unbounded<number>();
    yield* Queue.offer(queue, 1);
    const taken = yield* Queue.take(queue);
    const listed = yield* Stream.runCollect(Stream.make(taken, 2, 3));
    const decoded = Schema.decodeUnknownSync(Named)({ metadata: { name: "x" } });
    return [listed, decoded];
  });
  await Effect.runPromise(Effect.provide(program, Layer.empty));
};

const withClientNode = async (): Promise<void> => {
  const k8s = await import("@kubernetes/client-node");
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "c", server, caData: ca.toString("base64") }],
    users: [{ name: "u", token }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  await kubeConfig.makeApiClient(k8s.CoreV1Api).readNamespace({ name: "default" });
};

/** LIST `path` page by page, every item kept (by name), as an informer's cache would. */
const listAll = async (path: string): Promise<number> => {
  const kept = new Map<string, unknown>();
  let token: string | undefined;
  do {
    const query = `?limit=500${token === undefined ? "" : `&continue=${encodeURIComponent(token)}`}`;
    const page = (await getJson(`${path}${query}`)) as {
      metadata?: { continue?: string };
      items: { metadata: { name: string } }[];
    };
    for (const item of page.items) kept.set(item.metadata.name, item);
    token = page.metadata?.continue || undefined;
  } while (token !== undefined);
  return kept.size;
};

if (mode === "effect") await withEffect();
else if (mode === "client-node") await withClientNode();
else if (mode.startsWith("list:")) await listAll(mode.slice("list:".length));
else if (mode !== "https") throw new Error(`unknown mode ${mode}: https, effect, client-node or list:PATH`);

await get();
const before = process.cpuUsage();
for (let i = 0; i < requests; i += 1) await get();
const used = process.cpuUsage(before);
const total = process.cpuUsage();
const status = readFileSync("/proc/self/status", "utf8");
const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1]) * 1024;
agent.destroy();
process.stdout.write(
  `${JSON.stringify({
    peakRss: kib("VmHWM"),
    rss: kib("VmRSS"),
    cpuMsPerRequest: requests === 0 ? 0 : (used.user + used.system) / 1000 / requests,
    cpuMs: (total.user + total.system) / 1000,
  })}\n`,
);
