/**
 * The history recorder against an in-memory ConfigMap endpoint that behaves as the apiserver does for
 * these calls (resourceVersion preconditions, 409 on a stale PUT or an existing name), with faults.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { decodeEntries } from "../../src/history/history-entry.ts";
import { makeHistoryMetrics } from "../../src/history/history-metrics.ts";
import { makeTaskHistory, type TaskHistory } from "../../src/history/task-history.ts";
import { ApiCallError, type ApiRequest, type KubeClient } from "../../src/kube/kube-client.ts";

interface Stored {
  rv: number;
  body: { metadata: Record<string, unknown>; data: Record<string, string> };
}

const configMapName = "opstask-history-probes";

const fakeConfigMaps = () => {
  const objects = new Map<string, Stored>();
  let rv = 0;
  const requests: string[] = [];
  const faults: Array<(request: ApiRequest) => ApiCallError | undefined> = [];
  const respond = (stored: Stored) => ({
    status: 200,
    body: { ...stored.body, metadata: { ...stored.body.metadata, resourceVersion: String(stored.rv) } },
  });
  const client = {
    _tag: "KubeClient",
    server: "https://fake",
    request: async (request: ApiRequest) => {
      requests.push(`${request.method} ${request.path}`);
      for (const fault of faults) {
        const error = fault(request);
        if (error !== undefined) throw error;
      }
      const parts = request.path.split("/");
      const namespace = parts[4] ?? "";
      const name = parts[6];
      if (request.method === "GET" && name === undefined) {
        const all = [...objects.entries()]
          .filter(([key]) => parts[3] === "configmaps" || key.startsWith(`${namespace}/`))
          .filter(
            ([, stored]) =>
              request.query?.fieldSelector === `metadata.name=${String(stored.body.metadata.name)}`,
          )
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([, stored]) => respond(stored).body);
        // Pages as the apiserver does: `limit` items from the `continue` offset, and a token for the rest.
        const from = Number(request.query?.continue ?? 0);
        const limit = Number(request.query?.limit ?? all.length);
        const items = all.slice(from, from + limit);
        const rest = from + limit < all.length ? { continue: String(from + limit) } : {};
        const text = JSON.stringify({ metadata: rest, items });
        if (request.maxAnswerBytes !== undefined && text.length > request.maxAnswerBytes)
          return { status: 200, body: undefined, cutAt: request.maxAnswerBytes };
        return { status: 200, body: { metadata: rest, items }, bytes: text.length };
      }
      if (request.method === "GET") {
        const stored = objects.get(`${namespace}/${name}`);
        if (stored === undefined) throw new ApiCallError(404, "not found");
        return respond(stored);
      }
      const body = request.body as Stored["body"];
      const key = `${namespace}/${String(body.metadata.name)}`;
      const existing = objects.get(key);
      if (request.method === "POST" && existing !== undefined) throw new ApiCallError(409, "already exists");
      if (
        request.method === "PUT" &&
        (existing === undefined || String(existing.rv) !== body.metadata.resourceVersion)
      )
        throw new ApiCallError(409, "conflict");
      rv += 1;
      const stored = { rv, body: { ...body, metadata: { ...body.metadata, namespace } } };
      objects.set(key, stored);
      return respond(stored);
    },
    watch: async () => new AbortController(),
  } as unknown as KubeClient;
  /** Another writer changes the ConfigMap (bumps its version) with `entries`. */
  const edit = (key: string, text: string) => {
    const existing = objects.get(key);
    if (existing === undefined) throw new Error(`no ${key}`);
    rv += 1;
    objects.set(key, { rv, body: { ...existing.body, data: { "entries.json": text } } });
  };
  /** A ConfigMap of the kind in `namespace` with `text` as its entries, as any writer could leave it. */
  const put = (namespace: string, text: string) => {
    rv += 1;
    objects.set(`${namespace}/${configMapName}`, {
      rv,
      body: {
        metadata: { name: configMapName, namespace, labels: { "opstask.dev/history-of": "probes" } },
        data: { "entries.json": text },
      },
    });
  };
  return { client, objects, requests, faults, edit, put };
};

const labels = (target: string, state: string, type = "ping") => ({
  type,
  state,
  etcd: target,
  namespace: "ns",
  kind: "Probe",
});

const setup = (
  fake = fakeConfigMaps(),
  limits = { maxEntries: 200, maxBytes: 128 * 1024 },
  writeIntervalMs = 0,
) => {
  const registry = new Registry();
  let clock = Date.UTC(2026, 10, 26, 1, 0, 0);
  const logs: string[] = [];
  const ref: { history?: TaskHistory } = {};
  const lines: Array<{ message: string; fields: Record<string, unknown> }> = [];
  const history = makeTaskHistory({
    client: fake.client,
    configMapName,
    plural: "probes",
    limits,
    metrics: makeHistoryMetrics(registry, "Probe", () => ref.history?.pending() ?? 0),
    log: (level, message, fields) => {
      logs.push(`${level}: ${message}`);
      lines.push({ message, fields });
    },
    now: () => clock,
    retryBaseMs: 5,
    retryCapMs: 20,
    writeIntervalMs,
  });
  ref.history = history;
  const entries = (namespace = "ns") =>
    decodeEntries(fake.objects.get(`${namespace}/${configMapName}`)?.body.data["entries.json"]).entries;
  const metric = async (name: string) =>
    (await registry.metrics()).split("\n").filter((line) => line.startsWith(name));
  return {
    fake,
    history,
    registry,
    logs,
    lines,
    entries,
    metric,
    tick: (ms: number) => (clock += ms),
    now: () => clock,
  };
};

describe("outcomes are written to the namespace's ConfigMap, beside the pass", () => {
  it("a Succeeded task is written at once; its metric is its time in seconds", async () => {
    const { history, entries, metric } = setup();
    history.observer.taskFinished(labels("host-a", "Succeeded"), 3, "uid-1");
    await history.settled();
    expect(entries()).toEqual([
      {
        target: "host-a",
        type: "ping",
        last: { state: "Succeeded", at: Date.UTC(2026, 10, 26, 1), durationSeconds: 3 },
        lastSuccessAt: Date.UTC(2026, 10, 26, 1),
      },
    ]);
    expect(await metric("opstask_task_last_success_timestamp_seconds{")).toEqual([
      `opstask_task_last_success_timestamp_seconds{kind="Probe",namespace="ns",target="host-a",type="ping"} ${Date.UTC(2026, 10, 26, 1) / 1000}`,
    ]);
  });

  it("a Failed task is written at once with the error code of the write that ended it", async () => {
    const { history, entries, metric } = setup();
    history.observer.taskFinished(labels("host-b", "Failed"), 1, "uid-2", "ERR_NO_PONG");
    // The task is deleted at once (TTL 0): its outcome is already recorded.
    history.observer.taskGone?.("uid-2");
    await history.settled();
    expect(entries()[0]?.last).toMatchObject({ state: "Failed", errorCode: "ERR_NO_PONG" });
    expect(history.pending()).toBe(0);
    expect(await metric("opstask_task_last_failure_timestamp_seconds{")).toHaveLength(1);
  });

  it("an outcome without an error code is written without one", async () => {
    const { history, entries } = setup();
    history.observer.taskFinished(labels("host-c", "Rejected"), 0, "uid-3");
    await history.settled();
    expect(entries()[0]?.last).toEqual({
      state: "Rejected",
      at: Date.UTC(2026, 10, 26, 1),
      durationSeconds: 0,
    });
  });

  it("a task without a target is not recorded", async () => {
    const { history, fake } = setup();
    history.observer.taskFinished(labels("", "Rejected"), 0);
    await history.settled();
    expect(fake.requests).toEqual([]);
  });
});

describe("a burst of outcomes is carried by few writes", () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("the first outcome is written at once, the ones within the interval after it together", async () => {
    const { history, entries, fake } = setup(undefined, undefined, 500);
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    await sleep(50);
    expect(entries().map((entry) => entry.target)).toEqual(["host-a"]);
    for (const target of ["host-b", "host-c", "host-d", "host-e"]) {
      history.observer.taskFinished(labels(target, "Succeeded"), 1, target);
      await sleep(10);
    }
    await history.settled();
    expect(entries().map((entry) => entry.target)).toEqual([
      "host-a",
      "host-b",
      "host-c",
      "host-d",
      "host-e",
    ]);
    expect(fake.requests).toEqual([
      `GET /api/v1/namespaces/ns/configmaps/${configMapName}`,
      "POST /api/v1/namespaces/ns/configmaps",
      `PUT /api/v1/namespaces/ns/configmaps/${configMapName}`,
    ]);
  });

  it("a stop writes at once what waits for the interval", async () => {
    const { history, entries } = setup(undefined, undefined, 60_000);
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    await sleep(50);
    history.observer.taskFinished(labels("host-b", "Failed"), 1, "u2", "ERR_X");
    expect(entries().map((entry) => entry.target)).toEqual(["host-a"]);
    await history.stop();
    expect(entries().map((entry) => entry.target)).toEqual(["host-a", "host-b"]);
    expect(history.pending()).toBe(0);
  });
});

describe("writes use optimistic concurrency and never lose another writer's entries", () => {
  it("a PUT on a stale resourceVersion reads again and merges", async () => {
    const { history, entries, fake, tick } = setup();
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    await history.settled();
    // Another controller of the kind adds its own entry meanwhile.
    const other = decodeEntries(fake.objects.get(`ns/${configMapName}`)?.body.data["entries.json"]).entries;
    fake.edit(
      `ns/${configMapName}`,
      JSON.stringify([
        ...JSON.parse(fake.objects.get(`ns/${configMapName}`)?.body.data["entries.json"] ?? "[]"),
        {
          target: "host-z",
          type: "ping",
          lastOutcome: { state: "Succeeded", time: "2026-11-25T00:00:00Z", durationSeconds: 1 },
        },
      ]),
    );
    expect(other).toHaveLength(1);
    tick(60_000);
    history.observer.taskFinished(labels("host-b", "Succeeded"), 1, "u2");
    await history.settled();
    expect(entries().map((entry) => entry.target)).toEqual(["host-a", "host-b", "host-z"]);
    expect(fake.requests.filter((line) => line.startsWith("PUT"))).toHaveLength(2);
  });

  it("the writes carry the version they read: POST when absent, PUT with resourceVersion after", async () => {
    const { history, fake } = setup();
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    await history.settled();
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u2");
    await history.settled();
    expect(fake.requests).toEqual([
      `GET /api/v1/namespaces/ns/configmaps/${configMapName}`,
      "POST /api/v1/namespaces/ns/configmaps",
      `PUT /api/v1/namespaces/ns/configmaps/${configMapName}`,
    ]);
  });
});

describe("a failed write never holds a task: it is logged, counted and retried later", () => {
  it("three refused writes, then the write lands with every outcome", async () => {
    const fake = fakeConfigMaps();
    let refusals = 3;
    fake.faults.push((request) =>
      request.method !== "GET" && refusals-- > 0 ? new ApiCallError(403, "forbidden") : undefined,
    );
    const { history, entries, metric, logs } = setup(fake);
    history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    history.observer.taskFinished(labels("host-b", "Succeeded"), 1, "u2");
    await history.settled();
    expect(history.pending()).toBeGreaterThan(0);
    expect(logs.some((line) => line.startsWith("warn: history ConfigMap write failed"))).toBe(true);
    for (let i = 0; i < 200 && history.pending() > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await history.settled();
    expect(history.pending()).toBe(0);
    expect(entries().map((entry) => entry.target)).toEqual(["host-a", "host-b"]);
    expect(await metric("opstask_history_write_failures_total ")).toEqual([
      "opstask_history_write_failures_total 3",
    ]);
    await history.stop();
  });
});

describe("bounds: a task author cannot grow the history", () => {
  it("entries beyond maxEntries are evicted, logged, counted, and their series removed", async () => {
    const { history, entries, metric, logs, tick } = setup(undefined, {
      maxEntries: 3,
      maxBytes: 128 * 1024,
    });
    for (let i = 0; i < 5; i++) {
      tick(1000);
      history.observer.taskFinished(labels(`host-${i}`, "Succeeded"), 1, `u${i}`);
      await history.settled();
    }
    expect(entries().map((entry) => entry.target)).toEqual(["host-2", "host-3", "host-4"]);
    expect(await metric("opstask_task_last_success_timestamp_seconds{")).toHaveLength(3);
    expect(await metric("opstask_history_evictions_total ")).toEqual(["opstask_history_evictions_total 2"]);
    expect(logs.filter((line) => line.startsWith("warn: history is full"))).toHaveLength(2);
  });
});

describe("takeover reads the last leader's history into the metrics", () => {
  it("a new instance answers the same last-success value before any task finishes", async () => {
    const fake = fakeConfigMaps();
    const first = setup(fake);
    first.history.observer.taskFinished(labels("host-a", "Succeeded"), 1, "u1");
    await first.history.settled();
    const before = await first.metric("opstask_task_last_success_timestamp_seconds{");
    const second = setup(fake);
    expect(await second.metric("opstask_task_last_success_timestamp_seconds{")).toEqual([]);
    await second.history.takeover([undefined]);
    expect(await second.metric("opstask_task_last_success_timestamp_seconds{")).toEqual(before);
    expect(before).toHaveLength(1);
  });
});

/** A stored entry as any writer of the ConfigMap could put it (JSON, unchecked). */
const forged = (target: string, time: string, type = "ping") => ({
  target,
  type,
  lastOutcome: { state: "Succeeded", time, durationSeconds: 1 },
  lastSuccessTime: time,
});
const successSeries = "opstask_task_last_success_timestamp_seconds{";

describe("takeover applies the bounds before it exports anything (issue 35 M2)", () => {
  it("a ConfigMap larger than history.maxBytes is skipped with a warning, not exported", async () => {
    const fake = fakeConfigMaps();
    const entries = Array.from({ length: 5_002 }, (_, i) => forged(`host-${i}`, "2026-11-01T00:00:00Z"));
    fake.put("ns", JSON.stringify(entries));
    const { history, metric, lines } = setup(fake);
    await history.takeover([undefined]);
    expect(await metric(successSeries)).toEqual([]);
    const warning = lines.find((line) => line.message.startsWith("history ConfigMap is larger"));
    expect(warning?.fields).toMatchObject({ namespace: "ns", maxBytes: 128 * 1024 });
  });

  it("entries beyond maxEntries are dropped before they become series", async () => {
    const fake = fakeConfigMaps();
    const entries = Array.from({ length: 300 }, (_, i) =>
      forged(`h${i}`, new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString()),
    );
    fake.put("ns", JSON.stringify(entries));
    const { history, metric } = setup(fake, { maxEntries: 200, maxBytes: 128 * 1024 });
    await history.takeover([undefined]);
    const series = await metric(successSeries);
    expect(series).toHaveLength(200);
    // The newest are kept.
    expect(series.some((line) => line.includes('target="h299"'))).toBe(true);
    expect(series.some((line) => line.includes('target="h0"'))).toBe(false);
  });

  it("pages its LIST, and reads a page too large for its byte bound one ConfigMap at a time", async () => {
    const fake = fakeConfigMaps();
    for (let i = 0; i < 25; i++) fake.put(`ns-${String(i).padStart(2, "0")}`, "[]\n");
    // Five ConfigMaps of ~1 MB: a page holding them all is over the bound.
    const large = JSON.stringify([forged("x".repeat(1_000_000), "2026-11-01T00:00:00Z")]);
    const largeOnes = ["ns-03", "ns-04", "ns-05", "ns-06", "ns-07"];
    for (const namespace of largeOnes) fake.put(namespace, large);
    const { history, lines } = setup(fake);
    await history.takeover([undefined]);
    const lists = fake.requests.filter((request) => request === "GET /api/v1/configmaps");
    expect(lists.length).toBeGreaterThan(3);
    expect(lines.find((line) => line.message === "history read")?.fields).toMatchObject({ configMaps: 25 });
    expect(
      lines
        .filter((line) => line.message.startsWith("history ConfigMap is larger"))
        .map((l) => l.fields.namespace),
    ).toEqual(largeOnes);
  });
});

describe("history trusts no time the controller cannot have written (issue 35 M3)", () => {
  it("a forged success in 2099 is refused at takeover, never written back, and the own outcome is the last", async () => {
    const fake = fakeConfigMaps();
    fake.put(
      "ns",
      JSON.stringify([
        forged("etcd-main", "2099-01-01T00:00:00Z"),
        forged("etcd-other", "2026-11-01T00:00:00Z"),
      ]),
    );
    const { history, metric, entries, logs, now } = setup(fake);
    await history.takeover([undefined]);
    const series = await metric(successSeries);
    expect(series.map((line) => line.replace(/.*target="([^"]*)".*/, "$1"))).toEqual(["etcd-other"]);
    expect(logs.some((line) => line.includes("cannot read"))).toBe(true);

    history.observer.taskFinished(labels("etcd-main", "Failed"), 1, "u1", "ERR_X");
    await history.settled();
    const stored = entries().find((entry) => entry.target === "etcd-main");
    expect(stored?.lastSuccessAt).toBeUndefined();
    expect(stored?.last).toMatchObject({ state: "Failed", at: now() });
    expect(fake.objects.get(`ns/${configMapName}`)?.body.data["entries.json"]).not.toContain("2099");
  });

  it("a time a little ahead (another replica's clock) is read as now, so the next own outcome outranks it", async () => {
    const fake = fakeConfigMaps();
    const { history, entries, now, tick } = setup(fake);
    fake.put("ns", JSON.stringify([forged("etcd-main", new Date(now() + 30_000).toISOString())]));
    await history.takeover([undefined]);
    tick(1);
    history.observer.taskFinished(labels("etcd-main", "Failed"), 1, "u1", "ERR_X");
    await history.settled();
    expect(entries()[0]?.last.state).toBe("Failed");
  });
});

describe("history's texts reach /metrics and the terminal escaped (issue 35 L2)", () => {
  it("ESC and BEL in a stored entry are escaped in the decoded entry and the metric labels", async () => {
    const fake = fakeConfigMaps();
    fake.put(
      "ns",
      JSON.stringify([forged("etcd\u001b]0;pwned\u0007", "2026-11-01T00:00:00Z", "ty\u001b[2Jpe")]),
    );
    const { history, metric } = setup(fake);
    await history.takeover([undefined]);
    const series = (await metric(successSeries)).join("\n");
    expect(series).not.toContain("\u001b");
    expect(series).not.toContain("\u0007");
    expect(series).toContain('target="etcd\\\\x1b]0;pwned\\\\x07"');
    const decoded = decodeEntries(fake.objects.get(`ns/${configMapName}`)?.body.data["entries.json"]);
    expect(decoded.entries[0]).toMatchObject({ target: "etcd\\x1b]0;pwned\\x07", type: "ty\\x1b[2Jpe" });
  });
});
