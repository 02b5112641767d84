// The opstask controller's image for the local cluster: the project's own Dockerfile built by
// scripts/image-build (buildah, layers cached, bases made on this machine), written to a
// docker-archive named after the image ID, so a rebuild that changes nothing reuses the archive.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { defaultRepoRoot } from "../binaries.ts";
import type { BuiltImage } from "./build-image.ts";
import { ImageRepository } from "./recipe.ts";

const run = promisify(execFile);

export interface OpstaskImageOptions {
  readonly cacheDir: string;
  readonly repoRoot?: string;
  /** Bound for scripts/image-build (default 20 min: a cold build runs `npm ci` in the build stage). */
  readonly timeoutMs?: number;
}

/** Builds the Dockerfile (scripts/image-build) and returns its archive, `localhost/opstask-lab/opstask:<version>-<id>`. */
export const buildOpstaskImage = async (options: OpstaskImageOptions): Promise<BuiltImage> => {
  const repoRoot = options.repoRoot ?? defaultRepoRoot();
  const built = await run(join(repoRoot, "scripts/image-build"), [`${ImageRepository}/opstask:build`], {
    timeout: options.timeoutMs ?? 20 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: unknown) => {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`scripts/image-build failed: ${stderr.trim().slice(-2000) || String(error)}`);
  });
  const id = built.stdout.trim().replace(/^sha256:/, "");
  if (!/^[0-9a-f]{64}$/.test(id)) throw new Error(`scripts/image-build printed no image ID: ${built.stdout}`);
  const manifest: unknown = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
  const version =
    typeof manifest === "object" &&
    manifest !== null &&
    "version" in manifest &&
    typeof manifest.version === "string"
      ? manifest.version
      : "dev";
  const ref = `${ImageRepository}/opstask:${version}-${id.slice(0, 12)}`;
  const archive = join(options.cacheDir, `opstask-${id.slice(0, 16)}.tar`);
  if (existsSync(archive)) return { ref, archive, cached: true };
  mkdirSync(options.cacheDir, { recursive: true });
  const partial = `${archive}.${process.pid}.partial`;
  try {
    await run("buildah", ["push", "--quiet", id, `docker-archive:${partial}:${ref}`], { timeout: 300_000 });
    renameSync(partial, archive);
  } finally {
    rmSync(partial, { force: true });
  }
  return { ref, archive, cached: false };
};
