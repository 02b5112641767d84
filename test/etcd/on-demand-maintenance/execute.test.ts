/**
 * Execute against a real single-member etcd (JSON gateway on 127.0.0.1), reached as
 * `<etcd>-client.<ns>:<clientPort>` through a `--resolve` rule. The tests share one etcd and run in
 * order: each one's expectations start from the state the previous left.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusedPort } from "../support/stand-in.ts";
import {
  compactTo,
  etcdObject,
  fill,
  mib,
  rangeAt,
  run,
  startTestEtcd,
  status,
  type TestEtcd,
  taskOf,
  world,
} from "./support.ts";

let etcd: TestEtcd | undefined;
const server = (): TestEtcd => {
  if (etcd === undefined) throw new Error("etcd not started");
  return etcd;
};
const objects = () => world([["etcd", etcdObject({ clientPort: server().port })]]);

beforeAll(async () => {
  etcd = await startTestEtcd();
}, 120_000);
afterAll(async () => {
  await etcd?.stop();
}, 30_000);

const bothTask = taskOf({ compaction: { physical: true }, defragmentation: true });
const sizes = /db size ([\d.]+ (?:B|KiB|MiB|GiB)) → ([\d.]+ (?:B|KiB|MiB|GiB))$/;

describe("compaction (physical) and defragmentation of a real etcd", () => {
  it("compacts to the revision current before the call, drops older revisions, and shrinks the db", async () => {
    const { url } = server();
    const written = await fill(url, { keys: 300, rounds: 10, valueBytes: 2048 });
    const before = await status(url);
    expect(before.revision).toBe(written);
    expect(before.dbSize).toBeGreaterThan(4 * 1024 * 1024);

    const outcome = await run("execute", bothTask, objects());

    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(
        new RegExp(`^Compacted to revision ${written} \\(physical\\); defragmented 1 member\\(s\\): `),
      ),
    });
    expect(outcome.description).toMatch(sizes);
    const after = await status(url);
    console.info(
      `maintenance: revision ${written}, db size ${mib(before.dbSize)} → ${mib(after.dbSize)} ` +
        `(in use ${mib(before.dbSizeInUse)} → ${mib(after.dbSizeInUse)}); "${outcome.description}"`,
    );
    expect(after.revision).toBe(written); // compaction and defragmentation write nothing
    expect(after.dbSize).toBeLessThan(before.dbSize / 2);

    // Older revisions are gone; the compacted revision itself is still readable.
    const old = await rangeAt(url, "fill/0", 2);
    expect(old.status).toBe(400);
    expect(old.body.message).toMatch(/required revision has been compacted/);
    const current = await rangeAt(url, "fill/0", written);
    expect(current.status).toBe(200);
  });

  it("repeating Execute is safe: the revision is already compacted, defragmentation runs again", async () => {
    const { url } = server();
    const before = await status(url);
    const outcome = await run("execute", bothTask, objects());
    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(
        new RegExp(`^Revision ${before.revision} was already compacted; defragmented 1 member\\(s\\): `),
      ),
    });
    expect((await status(url)).revision).toBe(before.revision);
  });

  it("a repeat after new writes compacts to the new revision", async () => {
    const { url } = server();
    const written = await fill(url, { keys: 50, rounds: 2, valueBytes: 256, prefix: "again" });
    const outcome = await run("execute", bothTask, objects());
    expect(outcome.kind).toBe("completed");
    expect(outcome.description).toMatch(new RegExp(`^Compacted to revision ${written} \\(physical\\);`));
    expect((await rangeAt(url, "again/0", written - 1)).body.message).toMatch(/compacted/);
  });
});

describe("compaction alone", () => {
  it("compacts (not physical) without defragmenting: the db file does not shrink", async () => {
    const { url } = server();
    const written = await fill(url, { keys: 200, rounds: 5, valueBytes: 2048, prefix: "compact-only" });
    const before = await status(url);
    const outcome = await run("execute", taskOf({ compaction: {} }), objects());
    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(
        new RegExp(
          `^Compacted to revision ${written}; db size [\\d.]+ \\w+, in use [\\d.]+ \\w+ → [\\d.]+ \\w+$`,
        ),
      ),
    });
    const after = await status(url);
    console.info(
      `compaction only: db size ${mib(before.dbSize)} → ${mib(after.dbSize)}, ` +
        `in use ${mib(before.dbSizeInUse)} → ${mib(after.dbSizeInUse)}; "${outcome.description}"`,
    );
    // Without defragmentation bbolt never gives pages back to the file system.
    expect(after.dbSize).toBeGreaterThanOrEqual(before.dbSize);
    // The compaction is applied in the background; the old revision is rejected at once.
    expect((await rangeAt(url, "compact-only/0", written - 1)).body.message).toMatch(/compacted/);
  });
});

describe("defragmentation alone", () => {
  it("defragments without compacting: revisions since the last compaction stay readable", async () => {
    const { url } = server();
    const start = (await status(url)).revision;
    const written = await fill(url, { keys: 200, rounds: 5, valueBytes: 2048, prefix: "defrag-only" });
    // Free space first (compaction up to the middle of the writes), so that defragmentation has work.
    const middle = start + 600;
    expect((await compactTo(url, middle)).status).toBe(200);
    const before = await status(url);

    const outcome = await run("execute", taskOf({ defragmentation: true }), objects());

    expect(outcome).toEqual({
      kind: "completed",
      description: expect.stringMatching(/^Defragmented 1 member\(s\): \S+ db size [\d.]+ \w+ → [\d.]+ \w+$/),
    });
    const after = await status(url);
    console.info(`defragmentation only: db size ${mib(before.dbSize)} → ${mib(after.dbSize)}`);
    expect(after.dbSize).toBeLessThan(before.dbSize);
    expect(after.revision).toBe(written);
    // Not compacted by the task: a revision after the manual compaction is still there.
    expect((await rangeAt(url, "defrag-only/0", middle + 1)).status).toBe(200);
  });
});

describe("unreachable etcd", () => {
  it("a client port nothing listens on → retry with ERR_ETCD_UNREACHABLE", async () => {
    const closed = await refusedPort();
    const outcome = await run("execute", bothTask, world([["etcd", etcdObject({ clientPort: closed })]]));
    expect(outcome).toEqual({
      kind: "retry",
      description: "Failed to reach etcd",
      error: {
        code: "ERR_ETCD_UNREACHABLE",
        message: "failed to reach etcd",
        cause: expect.stringMatching(
          new RegExp(`^Post "http://test-etcd-client\\.ns:${closed}/v3/maintenance/status": .*ECONNREFUSED`),
        ),
      },
    });
  });
});
