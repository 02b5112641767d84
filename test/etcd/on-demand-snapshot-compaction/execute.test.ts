/**
 * Execute of the snapshot compaction task: one Job per task, found again on every attempt, and its
 * status turned into the task's outcome. Execute runs many times (a poll while the Job runs, again
 * after a crash), so every branch is also checked for what it does to the Jobs.
 */
import type { V1JobStatus } from "@kubernetes/client-node";
import { Effect } from "effect";
import { describe, expect, it } from "vitest";
import { Resources } from "../../../src/etcd/services.ts";
import { KubeError } from "../../../src/kube/errors.ts";
import {
  compactionTask,
  etcdName,
  etcdWithStore,
  existingJob,
  jobName,
  MemoryJobs,
  namespace,
  run,
  s3Store,
  taskName,
  taskUid,
  world,
} from "./fixtures.ts";

const running = { kind: "retry", description: `Compaction job ${jobName} is running`, afterMs: 5000 };
const now = new Date("2026-01-01T00:10:00Z");

const complete: V1JobStatus = {
  startTime: now,
  completionTime: now,
  succeeded: 1,
  conditions: [
    { type: "SuccessCriteriaMet", status: "True", reason: "CompletionsReached" },
    { type: "Complete", status: "True", reason: "CompletionsReached" },
  ],
};

const failedStatus = (reason?: string, message?: string): V1JobStatus => ({
  startTime: now,
  failed: 1,
  conditions: [
    { type: "FailureTarget", status: "True" },
    {
      type: "Failed",
      status: "True",
      ...(reason === undefined ? {} : { reason }),
      ...(message === undefined ? {} : { message }),
    },
  ],
});

/** The labels an earlier task of the same name put on its Job. */
const earlierTaskLabels = {
  "app.kubernetes.io/managed-by": "opstask",
  "app.kubernetes.io/component": "etcd-snapshot-compaction",
  "opstask.gardener.cloud/task-name": taskName,
  "opstask.gardener.cloud/task-uid": "uid-of-an-earlier-task",
};

const setup = () => ({
  objects: world(etcdWithStore(s3Store)),
  jobs: new MemoryJobs(),
  task: compactionTask(),
});

describe("Execute: ensuring the Job", () => {
  it("no Job yet → creates it and reports it running (a poll: retry without error after 5 s)", async () => {
    const { objects, jobs, task } = setup();
    expect(await run("execute", task, objects, jobs)).toEqual(running);
    expect(jobs.all()).toHaveLength(1);
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get", "create"]);
    expect(objects.reads).toEqual([{ resource: Resources.etcd, namespace, name: etcdName }]);
  });

  it("a second Execute finds the Job and creates no other; the Etcd is not read again", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    const first = jobs.job(namespace, jobName);
    objects.remove(Resources.etcd, namespace, etcdName); // no longer needed once the Job exists
    expect(await run("execute", task, objects, jobs)).toEqual(running);
    expect(jobs.all()).toHaveLength(1);
    expect(jobs.job(namespace, jobName)?.metadata?.uid).toBe(first?.metadata?.uid);
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get", "create", "get"]);
  });

  it("the poll interval is an option", async () => {
    const { objects, jobs, task } = setup();
    expect(await run("execute", task, objects, jobs, { pollIntervalMs: 250 })).toEqual({
      ...running,
      afterMs: 250,
    });
  });

  it("a create that loses a race (409) reads the winner and reports it, creating nothing", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs); // the winner, e.g. another incarnation
    jobs.setStatus(namespace, jobName, complete);
    let gets = 0;
    const outcome = await run("execute", task, objects, jobs, {
      // The first GET is stale: it does not see the winner yet.
      jobsShape: (memory) => ({
        ...memory,
        get: (ns, name) =>
          gets++ === 0
            ? new MemoryJobs().get(ns, name) // NotFound
            : memory.get(ns, name),
      }),
    });
    expect(outcome).toEqual({
      kind: "completed",
      description: `Snapshot compaction job ${jobName} succeeded`,
    });
    expect(jobs.all()).toHaveLength(1);
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get", "create", "create", "get"]);
  });

  it("a Job of an earlier task of the same name → deleted (UID precondition) and replaced", async () => {
    const { objects, jobs, task } = setup();
    const old = jobs.put(existingJob(earlierTaskLabels));
    jobs.setStatus(namespace, jobName, complete); // its success says nothing about this task
    expect(await run("execute", task, objects, jobs)).toEqual(running);
    const current = jobs.job(namespace, jobName);
    expect(current?.metadata?.uid).not.toBe(old.uid);
    expect(current?.metadata?.labels?.["opstask.gardener.cloud/task-uid"]).toBe(taskUid);
    expect(current?.status).toBeUndefined();
    expect(jobs.calls).toEqual([
      { operation: "get", namespace, name: jobName },
      { operation: "delete", namespace, name: jobName, uid: old.uid },
      { operation: "create", namespace, name: jobName },
    ]);
  });

  it("an earlier task's Job that is slow to go (finalizers) → wait for it, then create", async () => {
    const { objects, jobs, task } = setup();
    jobs.put(existingJob(earlierTaskLabels, ["example.com/hold"]));
    const waiting = {
      kind: "retry",
      description: `Waiting for job ${jobName} of an earlier task to be deleted`,
      afterMs: 5000,
    };
    expect(await run("execute", task, objects, jobs)).toEqual(waiting);
    expect(jobs.job(namespace, jobName)?.metadata?.deletionTimestamp).toBeDefined();
    expect(await run("execute", task, objects, jobs)).toEqual(waiting); // no second delete needed
    expect(jobs.calls.filter((call) => call.operation === "delete")).toHaveLength(1);
    jobs.removeFinalizers(namespace, jobName);
    expect(await run("execute", task, objects, jobs)).toEqual(running);
    expect(jobs.job(namespace, jobName)?.metadata?.labels?.["opstask.gardener.cloud/task-uid"]).toBe(taskUid);
  });

  it("a Job of that name that opstask did not make → failed with ERR_CREATE_JOB, left untouched", async () => {
    const { objects, jobs, task } = setup();
    jobs.put(existingJob({ app: "someone-else" }));
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "failed",
      description: `Job ${jobName} exists and was not created for this task`,
      error: {
        code: "ERR_CREATE_JOB",
        message: `failed to create job ${namespace}/${jobName}`,
        cause: `job ${namespace}/${jobName} already exists and is not a snapshot compaction job of task ${taskName}`,
      },
    });
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get"]);
    expect(jobs.job(namespace, jobName)?.metadata?.labels).toEqual({ app: "someone-else" });
  });

  it("this task's Job being deleted by someone → reported, and recreated once it is gone", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    const job = jobs.job(namespace, jobName);
    if (job?.metadata === undefined) throw new Error("no job");
    jobs.put({ ...job, metadata: { ...job.metadata, finalizers: ["example.com/hold"] } });
    await Effect.runPromise(jobs.delete(namespace, jobName, undefined)); // kubectl delete job
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "retry",
      description: `Compaction job ${jobName} is being deleted; a new one will be created`,
      afterMs: 5000,
    });
    jobs.removeFinalizers(namespace, jobName);
    expect(await run("execute", task, objects, jobs)).toEqual(running);
    expect(jobs.all()).toHaveLength(1);
  });
});

describe("Execute: the Job's status", () => {
  it("Complete=True → completed 'Snapshot compaction job <name> succeeded'", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.setStatus(namespace, jobName, complete);
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "completed",
      description: `Snapshot compaction job ${jobName} succeeded`,
    });
  });

  it("Failed=True → failed with ERR_COMPACTION_JOB_FAILED and the condition's reason and message", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.setStatus(
      namespace,
      jobName,
      failedStatus("DeadlineExceeded", "Job was active longer than specified deadline"),
    );
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "failed",
      description: `Snapshot compaction job ${jobName} failed`,
      error: {
        code: "ERR_COMPACTION_JOB_FAILED",
        message: "snapshot compaction job failed",
        cause: "DeadlineExceeded: Job was active longer than specified deadline",
      },
    });
  });

  it.each([
    ["reason only", "BackoffLimitExceeded", undefined, "BackoffLimitExceeded"],
    ["neither", undefined, undefined, "the job failed without a reason"],
  ])("Failed=True with %s → the cause says what there is", async (_, reason, message, cause) => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.setStatus(namespace, jobName, failedStatus(reason, message));
    expect(await run("execute", task, objects, jobs)).toMatchObject({ kind: "failed", error: { cause } });
  });

  it("conditions that are not True, or not terminal, mean running", async () => {
    const { objects, jobs, task } = setup();
    await run("execute", task, objects, jobs);
    jobs.setStatus(namespace, jobName, {
      active: 1,
      startTime: now,
      conditions: [
        { type: "Complete", status: "False" },
        { type: "Failed", status: "Unknown" },
        { type: "Suspended", status: "True" },
      ],
    });
    expect(await run("execute", task, objects, jobs)).toEqual(running);
  });
});

describe("Execute: failures", () => {
  const apiError = (reason: "Forbidden" | "Transient" | "Invalid", message: string) =>
    new KubeError({ reason, code: reason === "Forbidden" ? 403 : reason === "Invalid" ? 422 : 500, message });

  it("GET of the Job fails → retry with ERR_GET_JOB and the API text", async () => {
    const { objects, jobs, task } = setup();
    jobs.fail("get", apiError("Forbidden", 'jobs.batch "compact-1-compact" is forbidden'));
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "retry",
      description: "Failed to get compaction job",
      error: {
        code: "ERR_GET_JOB",
        message: `failed to get job ${namespace}/${jobName}`,
        cause: 'jobs.batch "compact-1-compact" is forbidden',
      },
    });
    expect(jobs.all()).toEqual([]);
  });

  it("create fails transiently → retry with ERR_CREATE_JOB; the next attempt creates it", async () => {
    const { objects, jobs, task } = setup();
    jobs.fail("create", apiError("Transient", "etcdserver: request timed out"));
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "retry",
      description: "Failed to create compaction job",
      error: {
        code: "ERR_CREATE_JOB",
        message: `failed to create job ${namespace}/${jobName}`,
        cause: "etcdserver: request timed out",
      },
    });
    jobs.heal("create");
    expect(await run("execute", task, objects, jobs)).toEqual(running);
  });

  it("create refused as invalid (422) → failed with ERR_CREATE_JOB: the same request fails again", async () => {
    const { objects, jobs, task } = setup();
    jobs.fail("create", apiError("Invalid", 'Job.batch "compact-1-compact" is invalid'));
    expect(await run("execute", task, objects, jobs)).toMatchObject({
      kind: "failed",
      error: { code: "ERR_CREATE_JOB", cause: 'Job.batch "compact-1-compact" is invalid' },
    });
  });

  it("deleting an earlier task's Job fails → retry with ERR_DELETE_JOB, nothing created", async () => {
    const { objects, jobs, task } = setup();
    jobs.put(existingJob(earlierTaskLabels));
    jobs.fail("delete", apiError("Forbidden", "jobs.batch is forbidden: cannot delete"));
    expect(await run("execute", task, objects, jobs)).toEqual({
      kind: "retry",
      description: "Failed to delete compaction job",
      error: {
        code: "ERR_DELETE_JOB",
        message: `failed to delete job ${namespace}/${jobName}`,
        cause: "jobs.batch is forbidden: cannot delete",
      },
    });
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get", "delete"]);
  });

  it("the Etcd is gone before the Job was created → failed with ERR_GET_ETCD, no create", async () => {
    const jobs = new MemoryJobs();
    expect(await run("execute", compactionTask(), world(), jobs)).toMatchObject({
      kind: "failed",
      description: "Etcd object not found",
      error: { code: "ERR_GET_ETCD" },
    });
    expect(jobs.calls.map((call) => call.operation)).toEqual(["get"]);
  });

  it("backup disabled before the Job was created → failed with ERR_BACKUP_NOT_ENABLED", async () => {
    expect(
      await run("execute", compactionTask(), world(etcdWithStore(undefined)), new MemoryJobs()),
    ).toMatchObject({ kind: "failed", error: { code: "ERR_BACKUP_NOT_ENABLED" } });
  });

  it("the Local store's secret is missing → failed with ERR_GET_BACKUP_SECRET; unreadable → retry", async () => {
    const objects = world(etcdWithStore({ provider: "Local", secretRef: "local-backup" }));
    expect(await run("execute", compactionTask(), objects, new MemoryJobs())).toEqual({
      kind: "failed",
      description: "Failed to get backup store secret",
      error: {
        code: "ERR_GET_BACKUP_SECRET",
        message: `failed to get backup store secret ${namespace}/local-backup`,
        cause: 'secrets "local-backup" not found',
      },
    });
    objects.fail(Resources.secret, namespace, "local-backup", "secrets is forbidden");
    expect(await run("execute", compactionTask(), objects, new MemoryJobs())).toMatchObject({
      kind: "retry",
      error: { code: "ERR_GET_BACKUP_SECRET", cause: "secrets is forbidden" },
    });
  });
});
