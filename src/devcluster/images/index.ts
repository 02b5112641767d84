// The local cluster's images, built (or taken from the cache) in one call:
//
//   const images = await buildLabImages();
//   images.pause.ref        // containerd's sandbox_image
//   images.etcd.archive     // node.loadImage(images.etcd.archive)
//
// Binaries come from scripts/testbin (etcd35 and etcdbrctl from `etcdbrctl`, pause from `node`) and
// busybox from Debian's busybox-static (scripts/system-deps node). Archives are cached in
// ${OPSTASK_CACHE:-~/.cache/opstask}/images under a digest of their inputs.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { defaultRepoRoot, runTestbinScript } from "../binaries.ts";
import { type BuiltImage, buildImage } from "./build-image.ts";
import { type ClusterImageBinaries, clusterImageRecipes } from "./cluster-images.ts";
import { buildObjectStoreImage } from "./object-store-image.ts";
import { buildOpstaskImage } from "./opstask-image.ts";

export type { BuiltImage } from "./build-image.ts";
export type { ClusterImageBinaries } from "./cluster-images.ts";
export { ObjectStorePort } from "./object-store-image.ts";

export interface LabImages {
  readonly pause: BuiltImage;
  readonly busybox: BuiltImage;
  readonly etcd: BuiltImage;
  readonly etcdbrctl: BuiltImage;
}

export interface LabImagesWithOpstask extends LabImages {
  readonly opstask: BuiltImage;
  /** The lab's S3-compatible object store (object-store-image.ts). */
  readonly objectStore: BuiltImage;
}

export interface LabImagesOptions {
  /** Where archives are cached (default `${OPSTASK_CACHE:-~/.cache/opstask}/images`). */
  readonly cacheDir?: string;
  /** Skip scripts/testbin and /bin/busybox. */
  readonly binaries?: ClusterImageBinaries;
  readonly repoRoot?: string;
}

export const defaultImageCacheDir = (): string =>
  join(process.env.OPSTASK_CACHE ?? join(homedir(), ".cache", "opstask"), "images");

/** The binaries the images hold, from scripts/testbin's cache; fails naming what to build. */
export const resolveImageBinaries = async (repoRoot = defaultRepoRoot()): Promise<ClusterImageBinaries> => {
  const checked = await runTestbinScript(["--check", "etcdbrctl", "node"], { repoRoot, timeoutMs: 30_000 });
  const path = (name: string, how: string): string => {
    const found = checked.paths.get(name);
    if (found === undefined || !existsSync(found))
      throw new Error(`the ${name} binary is not built (${found ?? "unknown path"}): run ${how}`);
    return found;
  };
  return {
    pause: path("pause", "scripts/testbin node"),
    etcd: path("etcd35", "scripts/testbin etcdbrctl"),
    etcdbrctl: path("etcdbrctl", "scripts/testbin etcdbrctl"),
    busybox: existsSync("/bin/busybox")
      ? "/bin/busybox"
      : (() => {
          throw new Error("/bin/busybox is missing: run scripts/system-deps node (Debian's busybox-static)");
        })(),
  };
};

/** pause, busybox, etcd and etcdbrctl, built or from the cache. */
export const buildLabImages = async (options: LabImagesOptions = {}): Promise<LabImages> => {
  const cacheDir = options.cacheDir ?? defaultImageCacheDir();
  const binaries = options.binaries ?? (await resolveImageBinaries(options.repoRoot));
  const recipes = clusterImageRecipes(binaries);
  // One at a time: buildah's store takes a lock per commit anyway, and the machine has 2 cores.
  const pause = await buildImage(recipes.pause, cacheDir);
  const busybox = await buildImage(recipes.busybox, cacheDir);
  const etcd = await buildImage(recipes.etcd, cacheDir);
  const etcdbrctl = await buildImage(recipes.etcdbrctl, cacheDir);
  return { pause, busybox, etcd, etcdbrctl };
};

/** The lab images, the object store's and the opstask controller's image (scripts/image-build). */
export const buildLabImagesWithOpstask = async (
  options: LabImagesOptions = {},
): Promise<LabImagesWithOpstask> => {
  const cacheDir = options.cacheDir ?? defaultImageCacheDir();
  const images = await buildLabImages({ ...options, cacheDir });
  const objectStore = await buildObjectStoreImage(cacheDir, options.repoRoot);
  const opstask = await buildOpstaskImage({
    cacheDir,
    ...(options.repoRoot === undefined ? {} : { repoRoot: options.repoRoot }),
  });
  return { ...images, objectStore, opstask };
};
