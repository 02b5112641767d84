/**
 * Run by stately-inspector.test.ts in a fresh Node process: starts the inspector, streams a task's
 * lifecycle, calls `stop()` and then leaves the event loop alone. The process must exit by itself;
 * what happened is printed as JSON on exit.
 *
 *   relay:       in-process relay on a free port, a viewer connected (and never closed by us);
 *                also records which of @statelyai/inspect / ws were loaded by import and by start.
 *   unreachable: an existing-relay URL where nothing listens, reconnecting every 100 ms.
 */
import { registerHooks } from "node:module";
import { createServer } from "node:net";

const watched = ["@statelyai/inspect", "ws"];
const loaded = new Set<string>();
registerHooks({
  resolve: (specifier, context, nextResolve) => {
    if (watched.includes(specifier)) loaded.add(specifier);
    return nextResolve(specifier, context);
  },
});

const report: Record<string, unknown> = {};
let stoppedAt: number | undefined;
process.on("exit", () => {
  if (stoppedAt !== undefined) report.exitAfterStopMs = Date.now() - stoppedAt;
  process.stdout.write(JSON.stringify(report));
});

const { startStatelyInspector } = await import("../../src/inspect/stately-inspector.ts");
const { driveLifecycle, newTask } = await import("./lifecycle.ts");
report.loadedByImport = [...loaded].sort();
const task = { key: "default/exit", uid: "exit-uid" };

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

const mode = process.argv[2];
if (mode === "relay") {
  const inspector = await startStatelyInspector({ port: 0 });
  report.loadedByStart = [...loaded].sort();
  let received = 0;
  const viewer = new WebSocket(inspector.url);
  viewer.addEventListener("message", () => {
    received += 1;
  });
  viewer.addEventListener("close", () => {
    report.viewerClosed = true;
  });
  await new Promise((resolve) => viewer.addEventListener("open", resolve, { once: true }));
  driveLifecycle(task, newTask("exit", task.uid), inspector.observer);
  const deadline = Date.now() + 5_000;
  while (received < 13 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  report.received = received;
  await inspector.stop();
  stoppedAt = Date.now();
} else if (mode === "unreachable") {
  const inspector = await startStatelyInspector({ url: `ws://127.0.0.1:${await freePort()}`, retryMs: 100 });
  driveLifecycle(task, newTask("exit", task.uid), inspector.observer);
  await new Promise((resolve) => setTimeout(resolve, 500));
  report.stopped = true;
  await inspector.stop();
  stoppedAt = Date.now();
} else {
  throw new Error(`unknown mode ${String(mode)}`);
}
