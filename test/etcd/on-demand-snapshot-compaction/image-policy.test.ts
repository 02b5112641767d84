/**
 * Security finding 1 and 9 (issue 16): the compaction Job's image is the controller operator's
 * choice, never the task author's, and its pod meets the "restricted" Pod Security Standard with a
 * bounded deadline and resources.
 */
import type { V1Container, V1Job } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { isImageReference } from "../../../src/etcd/on-demand-snapshot-compaction/image-policy.ts";
import { DefaultCompactionImage } from "../../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";
import {
  compactionTask,
  etcdWithStore,
  jobName,
  MemoryJobs,
  namespace,
  type RunOptions,
  run,
  s3Store,
  world,
} from "./fixtures.ts";

const attacker = "attacker.example/exfiltrate:latest";
const operatorImage = "registry.example/gardener/etcdbrctl:v0.43.0";
const allowedImage = "registry.example/gardener/etcdbrctl:v0.44.0";
const policy: RunOptions = { defaultImage: operatorImage, allowedImages: [allowedImage] };

const containerOf = (job: V1Job | undefined): V1Container => {
  const container = job?.spec?.template.spec?.containers[0];
  if (container === undefined) throw new Error("no Job container");
  return container;
};

const executed = async (image: string | undefined, options: RunOptions = policy) => {
  const jobs = new MemoryJobs();
  const task = compactionTask(image === undefined ? {} : { image });
  const outcome = await run("execute", task, world(etcdWithStore(s3Store)), jobs, options);
  return { outcome, job: jobs.job(namespace, jobName) };
};

describe("the compaction image is the controller's choice (finding 1)", () => {
  it("a task naming an image the controller does not allow is Rejected at Admit, naming the field and the fix", async () => {
    const outcome = await run(
      "admit",
      compactionTask({ image: attacker }),
      world(etcdWithStore(s3Store)),
      new MemoryJobs(),
      policy,
    );
    expect(outcome).toMatchObject({
      kind: "failed",
      description: "Compaction image is not allowed by the controller",
      error: { code: "ERR_COMPACTION_IMAGE_NOT_ALLOWED", message: "compaction image not allowed" },
    });
    const cause = outcome.kind === "failed" ? outcome.error.cause : "";
    expect(cause).toContain(`spec.config.onDemandSnapshotCompaction.image: image "${attacker}"`);
    expect(cause).toContain("remove the field to use the controller's image");
    expect(cause).toContain("--compaction-allowed-images");
  });

  it("with the handler's defaults a task may not pick any image but the default", async () => {
    const { outcome, job } = await executed(attacker, {});
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_COMPACTION_IMAGE_NOT_ALLOWED" } });
    expect(job).toBeUndefined();
    expect(containerOf((await executed(DefaultCompactionImage, {})).job).image).toBe(DefaultCompactionImage);
  });

  it("Execute never creates a Job with a disallowed image (a task admitted by an earlier, laxer controller)", async () => {
    const { outcome, job } = await executed(attacker);
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_COMPACTION_IMAGE_NOT_ALLOWED" } });
    expect(job).toBeUndefined();
  });

  it("no image: the controller's; an allowed image or the controller's own named by the task: that one", async () => {
    expect(containerOf((await executed(undefined)).job).image).toBe(operatorImage);
    expect(containerOf((await executed(allowedImage)).job).image).toBe(allowedImage);
    expect(containerOf((await executed(operatorImage)).job).image).toBe(operatorImage);
  });

  it("the error echoes at most a bounded part of a huge image name", async () => {
    const outcome = await run(
      "admit",
      compactionTask({ image: `x/${"a".repeat(20_000)}` }),
      world(etcdWithStore(s3Store)),
      new MemoryJobs(),
      policy,
    );
    expect(outcome.kind === "failed" ? outcome.error.cause.length : 0).toBeLessThan(1_000);
  });

  it.each([
    DefaultCompactionImage,
    "etcdbrctl",
    "localhost:5000/etcdbrctl:dev",
    `registry.example/etcdbrctl:v0.43.0@sha256:${"0".repeat(64)}`,
    `registry.example/etcdbrctl@sha256:${"a".repeat(64)}`,
  ])("%s is an image reference the options accept", (image) => {
    expect(isImageReference(image)).toBe(true);
  });

  it.each([
    "",
    "Registry.Example/X:v1",
    "registry.example/etcdbrctl:v1 --privileged",
    "registry.example/etcdbrctl@sha256:short",
  ])("%j is refused as an image reference", (image) => {
    expect(isImageReference(image)).toBe(false);
  });
});

describe("the compaction pod is restricted and bounded (finding 9)", () => {
  it("runs as non-root with RuntimeDefault seccomp, no capabilities, no escalation, a read-only root", async () => {
    const { job } = await executed(undefined);
    expect(job?.spec?.template.spec?.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      fsGroup: 65532,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(containerOf(job).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    // A read-only root: /tmp is a volume of its own.
    expect(containerOf(job).volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
  });

  it("has requests and a memory limit", async () => {
    expect(containerOf((await executed(undefined)).job).resources).toEqual({
      requests: { cpu: "600m", memory: "3Gi" },
      limits: { memory: "8Gi" },
    });
  });

  it("its deadline is at most one day, whatever timeoutSeconds says", async () => {
    const jobs = new MemoryJobs();
    const task = compactionTask({ timeoutSeconds: 2_147_483_647 });
    await run("execute", task, world(etcdWithStore(s3Store)), jobs, policy);
    expect(jobs.job(namespace, jobName)?.spec?.activeDeadlineSeconds).toBe(86_400);
  });
});

describe("images pinned by digest (issue 22, point 7)", () => {
  const repository = "registry.example/gardener/etcdbrctl";
  const tagAndDigest = `${repository}:v0.43.0@sha256:${"a".repeat(64)}`;
  const digestOnly = `${repository}@sha256:${"b".repeat(64)}`;
  const pinnedPolicy: RunOptions = { defaultImage: tagAndDigest, allowedImages: [digestOnly] };

  it("the controller's image by tag and digest is the Job's image, character for character", async () => {
    expect(containerOf((await executed(undefined, pinnedPolicy)).job).image).toBe(tagAndDigest);
  });

  it("a task may name an allowed digest reference, and its Job runs exactly that reference", async () => {
    expect(containerOf((await executed(digestOnly, pinnedPolicy)).job).image).toBe(digestOnly);
    expect(containerOf((await executed(tagAndDigest, pinnedPolicy)).job).image).toBe(tagAndDigest);
  });

  it.each([
    ["another digest of an allowed name", `${repository}@sha256:${"c".repeat(64)}`],
    ["the allowed tag with another digest", `${repository}:v0.43.0@sha256:${"c".repeat(64)}`],
    ["the allowed tag without its digest", `${repository}:v0.43.0`],
    ["the name alone", repository],
  ])("%s Rejects the task and creates no Job", async (_what, image) => {
    const { outcome, job } = await executed(image, pinnedPolicy);
    expect(outcome).toMatchObject({ kind: "failed", error: { code: "ERR_COMPACTION_IMAGE_NOT_ALLOWED" } });
    expect(job).toBeUndefined();
  });
});
