// A local cluster with a real node (src/devcluster/node) per test file, with the images its tests
// run: pause (the sandbox), busybox, and kubectl (an in-cluster API client).
import { afterAll, beforeAll } from "vitest";
import { type BuiltImage, buildImage } from "../../src/devcluster/images/build-image.ts";
import { busyboxRecipe, pauseRecipe } from "../../src/devcluster/images/cluster-images.ts";
import { defaultImageCacheDir } from "../../src/devcluster/images/index.ts";
import {
  accountFiles,
  baseDirectories,
  type ImageRecipe,
  NonRootUser,
} from "../../src/devcluster/images/recipe.ts";
import {
  type LocalCluster,
  type LocalClusterOptions,
  startLocalCluster,
} from "../../src/devcluster/node/local-cluster.ts";
import { type NodeBinaries, resolveNodeBinaries } from "../../src/devcluster/node/node-binaries.ts";

const BUILD_TIMEOUT_MS = 45 * 60_000;
const START_TIMEOUT_MS = 120_000;

/** kubectl alone, as a non-root user: `kubectl auth whoami` in a pod shows whose token it used. */
export const kubectlRecipe = (kubectl: string): ImageRecipe => ({
  name: "kubectl",
  version: /-(v[\d.]+)$/.exec(kubectl)?.[1] ?? "local",
  files: [{ from: kubectl, to: "/kubectl", mode: 0o755 }],
  texts: [...accountFiles],
  links: [],
  directories: [...baseDirectories],
  config: { entrypoint: ["/kubectl"], env: { HOME: "/tmp" }, user: `${NonRootUser}:${NonRootUser}` },
});

export interface NodeTestImages {
  readonly pause: BuiltImage;
  readonly busybox: BuiltImage;
  readonly kubectl: BuiltImage;
}

export interface LocalClusterHandle {
  readonly cluster: LocalCluster;
  readonly images: NodeTestImages;
  readonly binaries: NodeBinaries;
}

/** Starts the cluster in `beforeAll`, stops it in `afterAll`; returns an accessor for tests. */
export function useLocalCluster(
  options: Omit<LocalClusterOptions, "sandboxImage" | "nodeBinaries"> = {},
): () => LocalClusterHandle {
  let handle: LocalClusterHandle | undefined;
  beforeAll(
    async () => {
      const binaries = await resolveNodeBinaries({ buildTimeoutMs: BUILD_TIMEOUT_MS });
      const cacheDir = defaultImageCacheDir();
      const pause = await buildImage(pauseRecipe(binaries.pause), cacheDir);
      const busybox = await buildImage(busyboxRecipe("/bin/busybox"), cacheDir);
      const kubectl = await buildImage(kubectlRecipe(binaries.kubectl), cacheDir);
      const cluster = await startLocalCluster({
        startTimeoutMs: START_TIMEOUT_MS,
        buildTimeoutMs: BUILD_TIMEOUT_MS,
        ...options,
        nodeBinaries: binaries,
        sandboxImage: pause,
        images: [busybox.archive, kubectl.archive, ...(options.images ?? [])],
      });
      handle = { cluster, images: { pause, busybox, kubectl }, binaries };
    },
    2 * BUILD_TIMEOUT_MS + START_TIMEOUT_MS + 60_000,
  );
  afterAll(async () => {
    await handle?.cluster.stop();
  }, 120_000);
  return () => {
    if (handle === undefined)
      throw new Error("local cluster not started: call the accessor inside tests/hooks");
    return handle;
  };
}
