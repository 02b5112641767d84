// The informer's LIST pages are bounded in bytes as well as in objects, against a scripted API server
// that pages as the apiserver does (limit and continue): small objects come in pages of 500 with one
// request each, as before; large ones never make the client read more than the bound of one page,
// however many fit the `limit`, and every object still reaches the cache.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { assert, describe, it } from "@effect/vitest";
import { Effect, Exit, Scope } from "effect";
import { afterAll, beforeAll } from "vitest";
import { type KubeClient, makeKubeClient } from "../../src/kube/kube-client.ts";
import { makeInformer } from "../../src/runtime/informer.ts";
import { resource } from "../kube/fixtures.ts";

/** A LIST as the client read it: asked for `limit` objects, read `bytes` whole or stopped at `cutAt`. */
interface ListRead {
  readonly limit: number;
  readonly bytes: number | undefined;
  readonly cutAt: number | undefined;
}

let server: Server;
let port = 0;
let objects: unknown[] = [];
let reads: ListRead[] = [];
const openWatches = new Set<ServerResponse>();

const task = (index: number, bulk: number) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: { name: `t-${index}`, namespace: "ns", uid: `uid-${index}`, resourceVersion: String(10 + index) },
  spec: { etcdName: "x".repeat(bulk), config: { onDemandSnapshot: { type: "full" } } },
});

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    response.writeHead(200, { "content-type": "application/json" });
    if (url.searchParams.get("watch") === "true") {
      openWatches.add(response);
      response.once("close", () => openWatches.delete(response));
      response.write(""); // headers out; the watch stays open and quiet
      return;
    }
    const limit = Number(url.searchParams.get("limit") ?? "0");
    const from = Number(url.searchParams.get("continue") ?? "0");
    const page = objects.slice(from, from + limit);
    const next = from + limit < objects.length ? String(from + limit) : undefined;
    response.end(
      JSON.stringify({
        kind: "List",
        metadata: { resourceVersion: "9", ...(next === undefined ? {} : { continue: next }) },
        items: page,
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const watch of openWatches) watch.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const listAll = (pageBytes?: number) =>
  Effect.gen(function* () {
    reads = [];
    const scope = yield* Scope.make();
    const real = makeKubeClient({
      server: `http://127.0.0.1:${port}`,
      credentials: async () => ({ headers: {} }),
    });
    // The client as the informer uses it, recording what each LIST answer cost to read.
    const kubeConfig: KubeClient = {
      ...real,
      request: async (request, signal) => {
        const answer = await real.request(request, signal);
        if (request.query?.watch === undefined)
          reads.push({ limit: Number(request.query?.limit), bytes: answer.bytes, cutAt: answer.cutAt });
        return answer;
      },
    };
    const informer = yield* makeInformer({
      kubeConfig,
      resource,
      namespace: "ns",
      ...(pageBytes === undefined ? {} : { pageBytes }),
    }).pipe(Scope.provide(scope));
    yield* informer.synced;
    const cached = informer.keys().length;
    yield* Scope.close(scope, Exit.void);
    real.close();
    return { cached, reads: [...reads] };
  });

describe("informer: LIST pages bounded in bytes", () => {
  it.effect("small objects: pages of 500, one request each, as before", () =>
    Effect.gen(function* () {
      objects = Array.from({ length: 1_200 }, (_, index) => task(index, 1_000));
      const { cached, reads } = yield* listAll();
      assert.strictEqual(cached, 1_200);
      assert.deepStrictEqual(
        reads.map((read) => [read.limit, read.cutAt]),
        [
          [500, undefined],
          [500, undefined],
          [500, undefined],
        ],
      );
    }),
  );

  it.effect("large objects: no page is read past the bound, and every object is cached", () =>
    Effect.gen(function* () {
      // 150 objects of ~100 KB: 15 MB in what would be one page of 500.
      objects = Array.from({ length: 150 }, (_, index) => task(index, 100_000));
      const pageBytes = 1024 * 1024;
      const { cached, reads } = yield* listAll(pageBytes);
      assert.strictEqual(cached, 150);
      // Every page read whole fits the bound; a cut one stopped within a socket read (64 KiB) past it.
      for (const read of reads) {
        const where = `a page of limit ${read.limit}`;
        if (read.bytes !== undefined) assert.isAtMost(read.bytes, pageBytes, where);
        else assert.isAtMost(read.cutAt ?? 0, pageBytes + 64 * 1024, where);
      }
      // A few cut reads (500 → 62 → 7), then pages of 7 (3/4 of the bound): not one request per object.
      assert.isAtMost(reads.filter((read) => read.cutAt !== undefined).length, 2);
      assert.isAtMost(reads.length, 2 + Math.ceil(150 / 7));
    }),
  );

  it.effect("one object larger than the bound is read alone, whole", () =>
    Effect.gen(function* () {
      objects = [task(0, 1_000), task(1, 1_500_000), task(2, 1_000)];
      const { cached, reads } = yield* listAll(1024 * 1024);
      assert.strictEqual(cached, 3);
      assert.isTrue(reads.some((read) => read.limit === 1 && (read.bytes ?? 0) > 1_500_000));
    }),
  );
});
