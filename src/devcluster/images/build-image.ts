// Builds an image from a recipe with buildah, FROM scratch, into a docker-archive file that
// containerd imports (`ctr -n k8s.io images import`). The archive is cached under the recipe's
// digest: a second call with the same inputs returns at once. The root filesystem is staged in a
// directory and copied into the mounted container with `cp -a`, which keeps owners, modes and
// symbolic links exactly (`buildah copy` makes every file root's), and committed with a fixed
// timestamp, so the same inputs give the same image ID.
//
// buildah's store (/var/lib/containers) is shared with every other user of the machine: the image is
// committed without a name and removed once it is in the archive.
import { execFile } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { type ImageRecipe, imageReference, recipeDigest } from "./recipe.ts";

const run = promisify(execFile);

/** A built image: the reference it is imported under and the archive holding it. */
export interface BuiltImage {
  readonly ref: string;
  readonly archive: string;
  /** True when the archive came from the cache. */
  readonly cached: boolean;
}

const buildah = async (args: ReadonlyArray<string>): Promise<string> => {
  try {
    const { stdout } = await run("buildah", [...args], { timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
    return stdout.trim();
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`buildah ${args.join(" ")} failed: ${stderr.trim() || String(error)}`);
  }
};

const within = (root: string, path: string): string => join(root, path);

/** Writes the recipe's root filesystem under `root` (which must exist and be empty). */
export const stageRootfs = (recipe: ImageRecipe, root: string): void => {
  const parent = (path: string) => mkdirSync(dirname(within(root, path)), { recursive: true, mode: 0o755 });
  for (const directory of recipe.directories) {
    const path = within(root, directory.to);
    mkdirSync(path, { recursive: true, mode: 0o755 });
    chmodSync(path, directory.mode);
    chownSync(path, directory.uid, directory.gid);
  }
  for (const file of recipe.files) {
    parent(file.to);
    copyFileSync(file.from, within(root, file.to));
    chmodSync(within(root, file.to), file.mode);
  }
  for (const text of recipe.texts) {
    parent(text.to);
    writeFileSync(within(root, text.to), text.content);
    chmodSync(within(root, text.to), text.mode);
  }
  for (const link of recipe.links) {
    parent(link.to);
    symlinkSync(link.target, within(root, link.to));
  }
};

const configArgs = (recipe: ImageRecipe): string[] => {
  const { config } = recipe;
  return [
    ...(config.entrypoint === undefined ? [] : ["--entrypoint", JSON.stringify(config.entrypoint)]),
    ...(config.cmd === undefined ? [] : ["--cmd", JSON.stringify(config.cmd)]),
    ...Object.entries(config.env).flatMap(([name, value]) => ["--env", `${name}=${value}`]),
    ...(config.user === undefined ? [] : ["--user", config.user]),
    ...(config.workdir === undefined ? [] : ["--workingdir", config.workdir]),
    "--label",
    `org.opencontainers.image.version=${recipe.version}`,
  ];
};

/** Commits the staged root as an image and writes it to `archive` under `ref`. */
const commitArchive = async (recipe: ImageRecipe, root: string, ref: string, archive: string) => {
  const container = await buildah(["from", "--quiet", "scratch"]);
  let image: string | undefined;
  try {
    const mountpoint = await buildah(["mount", container]);
    await run("cp", ["-a", `${root}/.`, `${mountpoint}/`]);
    await buildah(["umount", container]);
    await buildah(["config", ...configArgs(recipe), container]);
    // No name: the archive then carries `ref` alone, and nothing in the shared store is overwritten.
    image = await buildah(["commit", "--quiet", "--timestamp", "0", container]);
    await buildah(["push", "--quiet", image, `docker-archive:${archive}:${ref}`]);
  } finally {
    await buildah(["rm", container]).catch(() => "");
    if (image !== undefined) await buildah(["rmi", image]).catch(() => "");
  }
};

/**
 * The image for `recipe`, from `cacheDir` when an archive of the same digest is there, else built.
 * Concurrent builders of one recipe each write a temporary archive and rename it into place.
 */
export const buildImage = async (recipe: ImageRecipe, cacheDir: string): Promise<BuiltImage> => {
  const digest = recipeDigest(recipe);
  const ref = imageReference(recipe, digest);
  const archive = join(cacheDir, `${recipe.name}-${digest.slice(0, 16)}.tar`);
  if (existsSync(archive)) return { ref, archive, cached: true };
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, `.${recipe.name}-`));
  try {
    const root = join(work, "rootfs");
    mkdirSync(root);
    stageRootfs(recipe, root);
    const partial = join(work, "image.tar");
    await commitArchive(recipe, root, ref, partial);
    renameSync(partial, archive);
    return { ref, archive, cached: false };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};
