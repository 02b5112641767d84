// TaskWriter and EventRecorder against a scripted HTTP server: which failures are retried, how often,
// and that every attempt is counted at the client.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { assert, describe, it } from "@effect/vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { Effect, Layer, Result } from "effect";
import { afterAll, beforeAll } from "vitest";
import { EventRecorder } from "../../src/interpreters/kubernetes/event-recorder.ts";
import { KubeRequests, kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import { TaskWriter } from "../../src/interpreters/kubernetes/task-writer.ts";
import { observed } from "../support/observed-faults.ts";
import { resource } from "./fixtures.ts";

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly contentType: string | undefined;
  readonly body: string;
}

type Reply = { readonly code: number; readonly body?: unknown } | "hang" | "reset";

let server: Server;
let port = 0;
let script: Reply[] = [];
const seen: Seen[] = [];
const hanging: ServerResponse[] = [];

const statusBody = (code: number, reason: string) => ({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  reason,
  message: `scripted ${code}`,
  code,
});

const object = (resourceVersion: string, uid = "uid-1") => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name: "t", namespace: "ns", uid, resourceVersion, finalizers: ["x/y"] },
});

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      seen.push({
        method: request.method ?? "",
        url: request.url ?? "",
        contentType: request.headers["content-type"],
        body,
      });
      const reply = script.shift() ?? { code: 500, body: statusBody(500, "InternalError") };
      if (reply === "hang") {
        hanging.push(response);
        return;
      }
      if (reply === "reset") {
        request.socket.destroy();
        return;
      }
      response.writeHead(reply.code, { "content-type": "application/json" });
      response.end(JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const response of hanging) response.destroy();
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

const layer = () =>
  kubernetesLayer({
    kubeConfig: kubeConfig(),
    resource,
    retry: { base: "1 millis", cap: "5 millis", retries: 3 },
    requestTimeout: "300 millis",
    slowWriteAfter: "100 millis",
    reportingInstance: "test-instance",
  });

const target = { name: "t", namespace: "ns", uid: "uid-1", resourceVersion: "7", finalizers: ["x/y"] };

const run = <A, E>(
  program: Effect.Effect<A, E, TaskWriter | EventRecorder | KubeRequests>,
  replies: Reply[],
) => {
  script = [...replies];
  seen.length = 0;
  return program.pipe(Effect.provide(Layer.fresh(layer())));
};

describe("TaskWriter retries only retryable failures", () => {
  it.live("503, 503, then 200: three attempts, all counted", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const result = yield* writer.patchStatus({ ...target, hasStatus: true }, { state: "Pending" });
        assert.strictEqual(result.metadata.resourceVersion, "8");
        const counter = yield* KubeRequests;
        assert.deepStrictEqual(counter.snapshot(), [
          { verb: "patch", code: 200, count: 1 },
          { verb: "patch", code: 503, count: 2 },
        ]);
        assert.strictEqual(seen.length, 3);
        for (const request of seen) {
          assert.strictEqual(request.method, "PATCH");
          assert.strictEqual(
            request.url,
            "/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcdopstasks/t/status?fieldManager=opstask",
          );
          assert.strictEqual(request.contentType, "application/json-patch+json");
          assert.deepStrictEqual(JSON.parse(request.body), [
            { op: "test", path: "/metadata/uid", value: "uid-1" },
            { op: "add", path: "/status/state", value: "Pending" },
          ]);
        }
      }),
      [
        { code: 503, body: statusBody(503, "ServiceUnavailable") },
        { code: 503, body: statusBody(503, "ServiceUnavailable") },
        { code: 200, body: object("8") },
      ],
    ),
  );

  it.live("409 Conflict is returned at once, not retried", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const result = yield* Effect.result(writer.addFinalizer(target, "opstask/f", 1));
        assert.isTrue(Result.isFailure(result));
        if (Result.isFailure(result)) {
          assert.strictEqual(result.failure.reason, "Conflict");
          assert.strictEqual(result.failure.message, "scripted 409");
        }
        assert.strictEqual(seen.length, 1);
        assert.deepStrictEqual(JSON.parse(seen[0]?.body ?? ""), {
          metadata: {
            resourceVersion: "7",
            finalizers: ["x/y", "opstask/f"],
            annotations: { "opstask.gardener.cloud/machine-version": "1" },
          },
        });
        assert.strictEqual((yield* KubeRequests).count("patch", 409), 1);
      }),
      [
        { code: 409, body: statusBody(409, "Conflict") },
        { code: 200, body: object("8") },
      ],
    ),
  );

  it.live("gives up after the configured retries with the last error", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const result = yield* Effect.result(writer.removeFinalizer(target, "x/y"));
        assert.isTrue(Result.isFailure(result) && result.failure.code === 500);
        assert.strictEqual(seen.length, 4);
        assert.deepStrictEqual(JSON.parse(seen[0]?.body ?? "").metadata.finalizers, []);
      }),
      [],
    ),
  );

  it.live("a network failure (connection reset) is retried and counted with code 0", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        yield* writer.patchStatus({ ...target, hasStatus: true }, { state: "Pending" });
        assert.strictEqual((yield* KubeRequests).count("patch", 0), 1);
        assert.strictEqual((yield* KubeRequests).count("patch", 200), 1);
      }),
      ["reset", { code: 200, body: object("8") }],
    ),
  );

  it.live("a request that hangs is aborted after the request timeout and retried", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const object = yield* writer.patchStatus({ ...target, hasStatus: true }, { state: "Pending" });
        assert.strictEqual(object.metadata.resourceVersion, "8");
        assert.strictEqual((yield* KubeRequests).count("patch", 0), 1);
      }),
      ["hang", { code: 200, body: object("8") }],
    ),
  );

  it.live("a write answered for another UID (a re-created namesake) fails as NotFound", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const result = yield* Effect.result(
          writer.patchStatus({ ...target, hasStatus: true }, { state: "Pending" }),
        );
        assert.isTrue(Result.isFailure(result) && result.failure.reason === "NotFound");
      }),
      [{ code: 200, body: object("8", "uid-2") }],
    ),
  );
});

describe("TaskWriter.deleteTask", () => {
  it.live("sends the UID precondition; a Status answer means gone", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        const gone = yield* writer.deleteTask(target);
        assert.isUndefined(gone);
        assert.strictEqual(seen[0]?.method, "DELETE");
        assert.deepStrictEqual(JSON.parse(seen[0]?.body ?? ""), { preconditions: { uid: "uid-1" } });
      }),
      [{ code: 200, body: { kind: "Status", status: "Success" } }],
    ),
  );

  it.live("404 and 409 (another UID holds the name) mean gone, not an error", () =>
    run(
      Effect.gen(function* () {
        const writer = yield* TaskWriter;
        assert.isUndefined(yield* writer.deleteTask(target));
        assert.isUndefined(yield* writer.deleteTask(target));
        assert.strictEqual(seen.length, 2);
      }),
      [
        { code: 404, body: statusBody(404, "NotFound") },
        { code: 409, body: statusBody(409, "Conflict") },
      ],
    ),
  );
});

/** Runs `program` with a fault counter and a logger that keeps the WARN lines. */

const throttled = { code: 429, body: statusBody(429, "TooManyRequests") };

describe("EventRecorder is best effort, with a bounded retry", () => {
  it.live("a throttled (429) create is retried, and recorded once the server accepts it", () =>
    run(
      observed((faults, warnings) =>
        Effect.gen(function* () {
          const recorder = yield* EventRecorder;
          yield* recorder.record(target, { type: "Warning", reason: "Failed", note: "x".repeat(5000) });
          assert.strictEqual(seen.length, 3);
          assert.strictEqual(
            seen[0]?.url,
            "/apis/events.k8s.io/v1/namespaces/ns/events?fieldManager=opstask",
          );
          const body = JSON.parse(seen[0]?.body ?? "");
          assert.isAtMost(Buffer.byteLength(body.note, "utf8"), 1024);
          assert.strictEqual(body.reportingInstance, "test-instance");
          assert.strictEqual((yield* KubeRequests).count("create", 429), 2);
          assert.strictEqual((yield* KubeRequests).count("create", 201), 1);
          assert.deepStrictEqual(faults.snapshot(), [{ operation: "event", fault: "retried", count: 2 }]);
          assert.deepStrictEqual(warnings, []);
        }),
      ),
      [throttled, throttled, { code: 201, body: {} }],
    ),
  );

  it.live(
    "a create that keeps failing is dropped after its retries: one WARN, counted, the caller goes on",
    () =>
      run(
        observed((faults, warnings) =>
          Effect.gen(function* () {
            const recorder = yield* EventRecorder;
            yield* recorder.record(target, { type: "Normal", reason: "Started", note: "n" });
            assert.strictEqual(seen.length, 4);
            assert.strictEqual((yield* KubeRequests).count("create", 503), 4);
            assert.strictEqual(faults.count("event", "retried"), 4);
            assert.strictEqual(faults.count("event", "dropped"), 1);
            assert.strictEqual(warnings.length, 1);
            assert.match(warnings[0] ?? "", /^event Started on ns\/t dropped: 503/);
          }),
        ),
        Array.from({ length: 5 }, () => ({ code: 503, body: statusBody(503, "ServiceUnavailable") })),
      ),
  );

  it.live(
    "a create that hangs is given up when the budget is spent: all attempts together stay within it",
    () =>
      run(
        observed((faults, warnings) =>
          Effect.gen(function* () {
            const recorder = yield* EventRecorder;
            const started = Date.now();
            yield* recorder.record(target, { type: "Normal", reason: "Started", note: "n" });
            const took = Date.now() - started;
            // The layer's budget is 300 ms: the first attempt may take all of it, and none follows.
            assert.isAtLeast(took, 290);
            assert.isBelow(took, 2_000);
            assert.strictEqual(seen.length, 1);
            assert.strictEqual(faults.count("event", "retried"), 1);
            assert.strictEqual(faults.count("event", "dropped"), 1);
            assert.deepStrictEqual(warnings, [
              "event Started on ns/t dropped: 0 Transient: timed out (all attempts)",
            ]);
          }),
        ),
        ["hang", "hang", "hang", "hang"],
      ),
  );

  it.live("a Conflict or Invalid answer is not retried", () =>
    run(
      observed((faults) =>
        Effect.gen(function* () {
          const recorder = yield* EventRecorder;
          yield* recorder.record(target, { type: "Normal", reason: "Started", note: "n" });
          assert.strictEqual(seen.length, 1);
          assert.strictEqual(faults.count("event", "dropped"), 1);
          assert.strictEqual(faults.count("event", "retried"), 0);
        }),
      ),
      [{ code: 422, body: statusBody(422, "Invalid") }],
    ),
  );
});

describe("TaskWriter makes its faults visible", () => {
  it.live("an attempt that hangs is logged at WARN while it waits, and each failed attempt is counted", () =>
    run(
      observed((faults, warnings) =>
        Effect.gen(function* () {
          const writer = yield* TaskWriter;
          yield* writer.patchStatus({ ...target, hasStatus: true }, { state: "Pending" });
          assert.strictEqual(faults.count("patchStatus", "slow"), 1);
          assert.strictEqual(faults.count("patchStatus", "retried"), 2);
          assert.strictEqual(faults.count("patchStatus", "failed"), 0);
          assert.deepStrictEqual(
            warnings.map((line) => line.replace(/\(.*\)$/, "(…)")),
            [
              "patchStatus of ns/t: no answer from the API server after 100 ms",
              "patchStatus of ns/t: attempt failed (…)",
              "patchStatus of ns/t: attempt failed (…)",
            ],
          );
          assert.match(warnings[1] ?? "", /\(0 Transient: patch request timed out\)$/);
          assert.match(warnings[2] ?? "", /\(503 Transient: scripted 503\)$/);
        }),
      ),
      ["hang", { code: 503, body: statusBody(503, "ServiceUnavailable") }, { code: 200, body: object("8") }],
    ),
  );

  it.live("a write given up after its retries is logged at WARN and counted as failed", () =>
    run(
      observed((faults, warnings) =>
        Effect.gen(function* () {
          const writer = yield* TaskWriter;
          const result = yield* Effect.result(writer.addFinalizer(target, "opstask/f", 1));
          assert.isTrue(Result.isFailure(result));
          assert.strictEqual(faults.count("addFinalizer", "retried"), 4);
          assert.strictEqual(faults.count("addFinalizer", "failed"), 1);
          assert.match(warnings.at(-1) ?? "", /^addFinalizer of ns\/t: given up after retries \(500/);
        }),
      ),
      [],
    ),
  );

  it.live("a Conflict is the caller's business: no warning, no fault", () =>
    run(
      observed((faults, warnings) =>
        Effect.gen(function* () {
          const writer = yield* TaskWriter;
          yield* Effect.result(writer.removeFinalizer(target, "x/y"));
          assert.deepStrictEqual(faults.snapshot(), []);
          assert.deepStrictEqual(warnings, []);
        }),
      ),
      [{ code: 409, body: statusBody(409, "Conflict") }],
    ),
  );
});
