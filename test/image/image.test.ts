/**
 * The image as users run it: scripts/image-build builds the Dockerfile with buildah (from base images
 * made on this machine, test/image/bases.sh), and test/image/check.ts runs it with podman as
 * deploy/deployment.yaml would, under exactly deploy/'s RBAC and its ServiceAccount's TokenRequest
 * token, until a snapshot task Succeeded through it. With one verb removed from the ClusterRole the
 * same check must fail. Cold (packages, bases, `npm ci` in the build) this takes minutes; warm, the
 * build is cached and each check takes ~10 s.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";
import { runImageCheck } from "./check.ts";
import { podmanGlobalArgs } from "./pod-as-podman.ts";

const run = promisify(execFile);
const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;

describe("the image", () => {
  let image = "";

  beforeAll(async () => {
    const built = await run(join(repoRoot, "scripts/image-build"), ["localhost/opstask:test"], {
      timeout: 20 * 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    image = built.stdout.trim();
  }, 21 * 60_000);

  it("prints package.json's version as a non-root user on a read-only root filesystem", async () => {
    const { stdout } = await run(
      "podman",
      [
        ...podmanGlobalArgs,
        "run",
        "--rm",
        "--runtime",
        "runc",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=1024:1024",
        "--network",
        "none",
        "--read-only",
        "--user",
        "65532:65532",
        image,
        "--version",
      ],
      { timeout: 60_000 },
    );
    expect(stdout).toBe(`${version}\n`);
  });

  it("runs a task to Succeeded under deploy/'s RBAC, as deploy/'s Deployment runs it", async () => {
    const result = await runImageCheck({ image, log: () => {} });
    expect(result.ok ? "passed" : `${result.reason}\n${result.controllerLog}`).toBe("passed");
  }, 180_000);

  it("fails the same check when the ClusterRole lacks patch on etcdopstasks/status", async () => {
    const result = await runImageCheck({
      image,
      log: () => {},
      breakRbac: { resource: "etcdopstasks/status", verb: "patch" },
    });
    // The whole result is printed when it does not match: the reason and the controller's log.
    expect(result).toMatchObject({ ok: false, reason: expect.stringContaining('verb="patch",code="403"') });
  }, 180_000);
});
