/**
 * Cleanup of the snapshot compaction task: deletes the task's Job (background propagation, UID
 * precondition), is idempotent, and never deletes a Job opstask did not make.
 */
import { describe, expect, it } from "vitest";
import { KubeError } from "../../../src/kube/errors.ts";
import {
  compactionTask,
  etcdWithStore,
  existingJob,
  jobName,
  MemoryJobs,
  namespace,
  run,
  s3Store,
  taskName,
  world,
} from "./fixtures.ts";

const setup = () => ({
  objects: world(etcdWithStore(s3Store)),
  jobs: new MemoryJobs(),
  task: compactionTask(),
});

describe("Cleanup", () => {
  it("deletes the task's Job → 'Cleanup completed: job <name> deleted'; repeating it is fine", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    const uid = jobs.job(namespace, jobName)?.metadata?.uid;
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} deleted`,
    });
    expect(jobs.all()).toEqual([]);
    expect(jobs.calls.at(-1)).toEqual({ operation: "delete", namespace, name: jobName, uid });
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} not found, nothing to delete`,
    });
  });

  it("no Job ever created (Execute failed early) → nothing to delete, no Etcd read", async () => {
    const { jobs, task } = setup();
    const objects = world();
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} not found, nothing to delete`,
    });
    expect(objects.reads).toEqual([]);
  });

  it("a finished Job is deleted too (its pods are kept until then for inspection)", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.setStatus(namespace, jobName, {
      failed: 1,
      conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }],
    });
    expect(await run("cleanup", task, objects, jobs)).toMatchObject({ kind: "completed" });
    expect(jobs.all()).toEqual([]);
  });

  it("a Job an earlier task of the same name left → deleted as well", async () => {
    const { objects, jobs, task } = setup();
    jobs.put(
      existingJob({
        "app.kubernetes.io/managed-by": "opstask",
        "app.kubernetes.io/component": "etcd-snapshot-compaction",
        "opstask.gardener.cloud/task-name": taskName,
        "opstask.gardener.cloud/task-uid": "uid-of-an-earlier-task",
      }),
    );
    expect(await run("cleanup", task, objects, jobs)).toMatchObject({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} deleted`,
    });
    expect(jobs.all()).toEqual([]);
  });

  it("a Job of that name that opstask did not make → left in place", async () => {
    const { objects, jobs, task } = setup();
    jobs.put(existingJob({ app: "someone-else" }));
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} was not created for this task, nothing to delete`,
    });
    expect(jobs.all()).toHaveLength(1);
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get"]);
  });

  it("GET fails → retry with ERR_GET_JOB", async () => {
    const { objects, jobs, task } = setup();
    jobs.fail("get", new KubeError({ reason: "Transient", code: 0, message: "get request timed out" }));
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "retry",
      description: "Failed to get compaction job",
      error: {
        code: "ERR_GET_JOB",
        message: `failed to get job ${namespace}/${jobName}`,
        cause: "get request timed out",
      },
    });
  });

  it("DELETE fails → retry with ERR_DELETE_JOB; the Job stays for the next attempt", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.fail("delete", new KubeError({ reason: "Forbidden", code: 403, message: "cannot delete jobs" }));
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "retry",
      description: "Failed to delete compaction job",
      error: {
        code: "ERR_DELETE_JOB",
        message: `failed to delete job ${namespace}/${jobName}`,
        cause: "cannot delete jobs",
      },
    });
    jobs.heal("delete");
    expect(await run("cleanup", task, objects, jobs)).toMatchObject({ kind: "completed" });
    expect(jobs.all()).toEqual([]);
  });

  it.each([
    ["gone meanwhile (404)", new KubeError({ reason: "NotFound", code: 404, message: "not found" })],
    [
      "replaced meanwhile (409, UID precondition)",
      new KubeError({ reason: "Conflict", code: 409, message: "x" }),
    ],
  ])("the Job %s → nothing to delete", async (_, error) => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.fail("delete", error);
    expect(await run("cleanup", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Cleanup completed: job ${jobName} not found, nothing to delete`,
    });
  });
});
