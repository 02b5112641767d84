// Contract test against a real etcd-backup-restore server (etcdbrctl v0.43 + etcd 3.5, Local store):
// the requests druid's on-demand snapshot handler sends, and the answers it relies on.
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackupRestore, startBackupRestore } from "../../src/devcluster/backup-restore.ts";
import { deadlineIn, pollUntil } from "../../src/devcluster/deadline.ts";

const BUILD_TIMEOUT_MS = 45 * 60_000;
const START_TIMEOUT_MS = 60_000;

interface Answer {
  readonly status: number;
  readonly body: string;
}

type Json = Record<string, unknown>;
const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null;

/** POST with no body, as druid does (`http.NewRequest(POST, url, nil)`). */
async function post(br: BackupRestore, path: string): Promise<Answer> {
  const res = await fetch(`${br.url}${path}`, { method: "POST", signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: await res.text() };
}

function snapshotOf(answer: Answer): Json {
  const parsed: unknown = JSON.parse(answer.body);
  if (!isJson(parsed)) throw new Error(`not a Snapshot: ${answer.body}`);
  return parsed;
}

describe("etcd-backup-restore (real etcdbrctl server)", () => {
  let br: BackupRestore | undefined;
  const server = (): BackupRestore => {
    if (br === undefined) throw new Error("backup-restore not started");
    return br;
  };

  beforeAll(
    async () => {
      // A long delta period: no periodic delta snapshot consumes the events these tests write.
      br = await startBackupRestore({
        deltaSnapshotPeriod: "1h",
        buildTimeoutMs: BUILD_TIMEOUT_MS,
        startTimeoutMs: START_TIMEOUT_MS,
      });
    },
    BUILD_TIMEOUT_MS + START_TIMEOUT_MS + 30_000,
  );
  afterAll(async () => {
    const dir = br?.dir;
    await br?.stop();
    if (dir !== undefined) expect(existsSync(dir)).toBe(false);
  }, 30_000);

  it("starts with an initial full snapshot in the Local store and reports its start-up time", async () => {
    const b = server();
    console.info(`etcd-backup-restore ready in ${b.startupMs} ms at ${b.url} (etcd ${b.etcdClientUrl})`);
    expect(b.startupMs).toBeLessThan(30_000);
    expect(b.url).toBe(`http://127.0.0.1:${b.port}`);
    const files = await b.listSnapshots();
    expect(files.some((f) => /^Full-\d{8}-\d{8}-\d+\.gz$/.test(f))).toBe(true);
    const health = await fetch(`${b.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ health: true });
  });

  it("POST /snapshot/full → 200 JSON Full snapshot and a new file in the store", async () => {
    const b = server();
    await b.putKeys(1); // a new revision, so the file name differs from the initial snapshot's
    const before = await b.listSnapshots();
    const answer = await post(b, "/snapshot/full");
    expect(answer.status, answer.body).toBe(200);
    const snap = snapshotOf(answer);
    expect(snap).toMatchObject({ kind: "Full", isFinal: false, compressionSuffix: ".gz" });
    const after = await b.listSnapshots();
    const added = after.filter((f) => !before.includes(f));
    expect(added).toEqual([snap.snapName]);
  });

  it("POST /snapshot/full?final=true → 200 JSON final Full snapshot (.final file)", async () => {
    const b = server();
    const before = await b.listSnapshots();
    const answer = await post(b, "/snapshot/full?final=true");
    expect(answer.status, answer.body).toBe(200);
    const snap = snapshotOf(answer);
    expect(snap).toMatchObject({ kind: "Full", isFinal: true });
    expect(String(snap.snapName)).toMatch(/\.final$/);
    const after = await b.listSnapshots();
    expect(after.filter((f) => !before.includes(f))).toEqual([snap.snapName]);
  });

  it("POST /snapshot/full?final=bogus → 400", async () => {
    const answer = await post(server(), "/snapshot/full?final=bogus");
    expect(answer.status).toBe(400);
  });

  it("POST /snapshot/delta after writes → 200 JSON Incr snapshot and a file", async () => {
    const b = server();
    await b.putKeys(5);
    // The snapshotter receives etcd's watch events asynchronously; wait until it has buffered them.
    await pollUntil(async () => ((await b.deltaPending()) ? true : undefined), {
      deadline: deadlineIn(10_000, "delta events"),
      what: "etcdbr_snapshot_required{kind=Incr} = 1",
      intervalMs: 20,
    });
    const before = await b.listSnapshots();
    const answer = await post(b, "/snapshot/delta");
    expect(answer.status, answer.body).toBe(200);
    const snap = snapshotOf(answer);
    expect(snap).toMatchObject({ kind: "Incr", isFinal: false });
    expect(Number(snap.lastRevision) - Number(snap.startRevision)).toBe(4); // 5 puts, 5 revisions
    expect(String(snap.snapName)).toMatch(/^Incr-\d{8}-\d{8}-\d+\.gz$/);
    const after = await b.listSnapshots();
    expect(after.filter((f) => !before.includes(f))).toEqual([snap.snapName]);
  });

  it("POST /snapshot/delta with no writes since → 200 with body exactly `null`, no file", async () => {
    const b = server();
    expect(await b.deltaPending()).toBe(false);
    const before = await b.listSnapshots();
    const answer = await post(b, "/snapshot/delta");
    expect(answer.status).toBe(200);
    expect(answer.body).toBe("null");
    expect(await b.listSnapshots()).toEqual(before);
  });

  it("/snapshot/latest lists the full snapshot and its delta", async () => {
    const res = await fetch(`${server().url}/snapshot/latest`);
    expect(res.status).toBe(200);
    const latest: unknown = await res.json();
    expect(latest).toMatchObject({
      fullSnapshot: { kind: "Full", isFinal: true },
      deltaSnapshots: [{ kind: "Incr" }],
    });
  });
});
