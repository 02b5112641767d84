/**
 * The local cluster's images (src/devcluster/images): each is built FROM scratch with buildah into a
 * docker-archive, and each is run (with podman, straight from its archive) doing what the cluster
 * needs of it. The same inputs give byte-identical archives, and a second call takes the cache.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildImage } from "../../src/devcluster/images/build-image.ts";
import { busyboxRecipe } from "../../src/devcluster/images/cluster-images.ts";
import {
  type BuiltImage,
  buildLabImages,
  type LabImages,
  resolveImageBinaries,
} from "../../src/devcluster/images/index.ts";

const run = promisify(execFile);
const podmanHost = ["--cgroup-manager", "cgroupfs"];
const runArgs = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

/** Runs the archive's image with podman (`--rm`, no network) and returns its output and exit code. */
const podmanRun = async (image: BuiltImage, args: ReadonlyArray<string>, entrypoint?: string) => {
  try {
    const { stdout, stderr } = await run(
      "podman",
      [
        ...podmanHost,
        "run",
        "--rm",
        ...runArgs,
        "--network",
        "none",
        ...(entrypoint === undefined ? [] : ["--entrypoint", entrypoint]),
        `docker-archive:${image.archive}`,
        ...args,
      ],
      { timeout: 120_000 },
    );
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
};

const sha256 = (path: string): string => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The image configuration inside a docker-archive (its `config.json`, via manifest.json). */
const imageConfig = async (archive: string): Promise<Record<string, unknown>> => {
  const manifest = JSON.parse((await run("tar", ["-xOf", archive, "manifest.json"])).stdout) as Array<{
    Config: string;
  }>;
  const name = manifest[0]?.Config ?? "";
  const config = JSON.parse((await run("tar", ["-xOf", archive, name])).stdout) as {
    config: Record<string, unknown>;
  };
  return config.config;
};

describe("the local cluster's images", () => {
  const cacheDir = mkdtempSync(join(tmpdir(), "opstask-images-"));
  let images: LabImages;

  beforeAll(async () => {
    images = await buildLabImages({ cacheDir });
  }, 300_000);

  afterAll(async () => {
    const refs = images === undefined ? [] : Object.values(images).map((image) => image.ref);
    await run("podman", [...podmanHost, "rmi", "--ignore", ...refs]).catch(() => undefined);
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it("are byte-identical when built again from the same inputs, and cached by them", async () => {
    const again = mkdtempSync(join(tmpdir(), "opstask-images-again-"));
    try {
      const binaries = await resolveImageBinaries();
      const rebuilt = await buildImage(busyboxRecipe(binaries.busybox), again);
      expect(rebuilt.cached).toBe(false);
      expect(rebuilt.ref).toBe(images.busybox.ref);
      expect(sha256(rebuilt.archive)).toBe(sha256(images.busybox.archive));
      const second = await buildLabImages({ cacheDir });
      expect(Object.values(second).map((image) => image.cached)).toEqual([true, true, true, true]);
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
  }, 300_000);

  it("busybox: a shell whose applets are relative links, and nc", async () => {
    const result = await podmanRun(images.busybox, [
      "sh",
      "-c",
      "readlink /bin/sh; readlink /bin/nc; echo hello | nc -h 2>&1 | head -1; id -u nonroot",
    ]);
    expect(result.code, result.output).toBe(0);
    const [sh, nc, , uid] = result.output.trim().split("\n");
    expect({ sh, nc, uid }).toEqual({ sh: "busybox", nc: "busybox", uid: "65532" });
  }, 120_000);

  it("pause: runs until SIGTERM and then exits 0", async () => {
    const name = `opstask-pause-${process.pid}`;
    await run("podman", [
      ...podmanHost,
      "run",
      "-d",
      "--name",
      name,
      ...runArgs,
      "--network",
      "none",
      `docker-archive:${images.pause.archive}`,
    ]);
    try {
      const running = await run("podman", [...podmanHost, "inspect", "--format", "{{.State.Status}}", name]);
      expect(running.stdout.trim()).toBe("running");
      await run("podman", [...podmanHost, "stop", "--time", "10", name]);
      const exited = await run("podman", [...podmanHost, "inspect", "--format", "{{.State.ExitCode}}", name]);
      expect(exited.stdout.trim()).toBe("0");
    } finally {
      await run("podman", [...podmanHost, "rm", "--force", name]).catch(() => undefined);
    }
  }, 120_000);

  it("etcd: etcd 3.5 as user 65532", async () => {
    const result = await podmanRun(images.etcd, ["--version"]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toMatch(/^etcd Version: 3\.5\.\d+$/m);
    expect(await imageConfig(images.etcd.archive)).toMatchObject({
      User: "65532:65532",
      Entrypoint: ["/usr/local/bin/etcd"],
    });
  }, 120_000);

  it("etcdbrctl: etcd-backup-restore v0.43 at /etcdbrctl as user 65532, as upstream's image", async () => {
    const result = await podmanRun(images.etcdbrctl, ["--version"]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain("etcd-backup-restore Version: v0.43.0");
    expect(await imageConfig(images.etcdbrctl.archive)).toMatchObject({
      User: "65532:65532",
      Entrypoint: ["/etcdbrctl"],
    });
  }, 120_000);
});
