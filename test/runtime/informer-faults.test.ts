// The informer against a scripted API server (no control plane): a watch expiry (410) is a WARN and a
// count, and after an outage the watch comes back as soon as a probe of the API server is answered,
// not when its grown backoff ends.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { assert, describe, it } from "@effect/vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { Effect, Exit, Logger, Scope } from "effect";
import { afterAll, beforeAll } from "vitest";
import { FaultCounter, KubeFaults } from "../../src/interpreters/kubernetes/fault-counter.ts";
import { makeInformer } from "../../src/runtime/informer.ts";
import { resource } from "../kube/fixtures.ts";

type Mode = "up" | "down";

let server: Server;
let port = 0;
let mode: Mode = "up";
/** Scripted answers to the next watch requests (then: stream `nextObjects`, keep the watch open). */
let watchScript: Array<"gone"> = [];
/** Objects the server has; each watch sends an ADDED for every one. */
let objects: string[] = [];
const openWatches = new Set<ServerResponse>();
const seen: string[] = [];

const task = (name: string, resourceVersion: string) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion },
});

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const kind =
      url.pathname === "/readyz" ? "probe" : url.searchParams.get("watch") === "true" ? "watch" : "list";
    seen.push(`${kind} ${mode}`);
    if (mode === "down") {
      request.socket.destroy();
      return;
    }
    if (kind === "probe") {
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    const items = objects.map((name, at) => task(name, String(10 + at)));
    if (kind === "list") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ kind: "List", metadata: { resourceVersion: "10" }, items }));
      return;
    }
    response.writeHead(200, { "content-type": "application/json" });
    if (watchScript.shift() === "gone") {
      const status = { kind: "Status", status: "Failure", reason: "Expired", message: "too old", code: 410 };
      // As the apiserver does: the ERROR event, then the end of the response a moment later.
      response.write(`${JSON.stringify({ type: "ERROR", object: status })}\n`);
      setTimeout(() => response.end(), 100);
      return;
    }
    for (const item of items) response.write(`${JSON.stringify({ type: "ADDED", object: item })}\n`);
    openWatches.add(response);
    response.on("close", () => openWatches.delete(response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const kubeConfig = (): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "fake", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "fake", cluster: "fake", user: "u" }],
    currentContext: "fake",
  });
  return kc;
};

/** Polls `check` every 20 ms until it holds (fails the test after `timeoutMs`). */
const eventually = (what: string, check: () => boolean, timeoutMs = 10_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`));
      yield* Effect.sleep(20);
    }
  });

/** Keeps the WARN lines logged. */
const warningsKept = () => {
  const warnings: string[] = [];
  const logger = Logger.make((log: Logger.Options<unknown>) => {
    if (log.logLevel === "Warn") warnings.push(String(log.message));
  });
  return { warnings, layer: Logger.layer([logger]) };
};

describe("informer: faults made visible", () => {
  it.live("a watch expiry (410) is logged at WARN, counted, and followed by a relist", () => {
    mode = "up";
    objects = ["a"];
    watchScript = ["gone"];
    seen.length = 0;
    const faults = new FaultCounter();
    const { warnings, layer } = warningsKept();
    return Effect.gen(function* () {
      const scope = yield* Scope.make();
      const informer = yield* makeInformer({ kubeConfig: kubeConfig(), resource, namespace: "ns" }).pipe(
        Scope.provide(scope),
      );
      yield* informer.synced;
      yield* eventually("the relist after the expiry", () => informer.stats().lists === 2);
      assert.strictEqual(faults.count("watch", "expired"), 1);
      assert.isTrue(
        warnings.some((line) => line.startsWith("informer etcdopstasks: watch expired (410 Gone)")),
        warnings.join("\n"),
      );
      yield* Scope.close(scope, Exit.void);
    }).pipe(Effect.provideService(KubeFaults, faults), Effect.provide(layer));
  });

  it.live(
    "after an outage the watch is back once a probe is answered, not after its backoff (1 hour here)",
    () => {
      mode = "up";
      objects = ["a"];
      watchScript = [];
      seen.length = 0;
      const faults = new FaultCounter();
      return Effect.gen(function* () {
        const scope = yield* Scope.make();
        const informer = yield* makeInformer({
          kubeConfig: kubeConfig(),
          resource,
          namespace: "ns",
          backoff: { initial: "1 hour", max: "1 hour" },
          probeInterval: "50 millis",
        }).pipe(Scope.provide(scope));
        yield* informer.synced;
        yield* eventually("the first watch", () => openWatches.size === 1);
        // The API server goes away: the open watch breaks, and probes go unanswered for a while.
        mode = "down";
        for (const watch of openWatches) watch.socket?.destroy();
        yield* eventually("the broken watch", () => informer.stats().failures === 1);
        yield* Effect.sleep(300); // the outage lasts a moment
        // It is back, with a task created meanwhile: the next probe ends the backoff, the watch brings it.
        objects = ["a", "b"];
        mode = "up";
        yield* eventually("the task created during the outage", () => informer.get("ns", "b") !== undefined);
        assert.strictEqual(faults.count("watch", "failed"), 1);
        assert.isAtLeast(seen.filter((line) => line === "probe down").length, 1);
        assert.deepStrictEqual(seen.filter((line) => line.endsWith(" up")).slice(-2), [
          "probe up",
          "watch up",
        ]);
        yield* Scope.close(scope, Exit.void);
      }).pipe(Effect.provideService(KubeFaults, faults), Effect.provide(Logger.layer([])));
    },
  );
});
