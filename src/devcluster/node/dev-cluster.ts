// `opstask dev --cluster` building block: the local cluster with a real node in the foreground until
// SIGINT/SIGTERM (or an abort signal), with the admin kubeconfig at a stable path. What runs on it
// (opstask, an etcd cluster) is the caller's, in onReady.
import { buildImage } from "../images/build-image.ts";
import { pauseRecipe } from "../images/cluster-images.ts";
import { defaultImageCacheDir } from "../images/index.ts";
import {
  type LocalCluster,
  type LocalClusterOptions,
  type LocalImage,
  startLocalCluster,
} from "./local-cluster.ts";
import { resolveNodeBinaries } from "./node-binaries.ts";

export interface DevLocalClusterOptions extends Omit<LocalClusterOptions, "sandboxImage"> {
  readonly kubeconfigPath: string;
  /** Default: the pause image built from scripts/testbin's pause (src/devcluster/images). */
  readonly sandboxImage?: LocalImage;
  /** Called once the cluster is ready (deploy onto it here); then it runs until a signal or `signal` aborts. */
  readonly onReady?: (cluster: LocalCluster) => void | Promise<void>;
  readonly signal?: AbortSignal;
}

export async function runDevLocalCluster(options: DevLocalClusterOptions): Promise<void> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const nodeBinaries = options.nodeBinaries ?? (await resolveNodeBinaries({ log }));
  const sandboxImage =
    options.sandboxImage ?? (await buildImage(pauseRecipe(nodeBinaries.pause), defaultImageCacheDir()));
  const cluster = await startLocalCluster({ ...options, log, nodeBinaries, sandboxImage });
  log(
    `devcluster: export KUBECONFIG=${cluster.kubeconfigPath}  (server ${cluster.apiserverUrl}, node ${cluster.nodeName}; Ctrl-C stops)`,
  );
  let release: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    release = resolve;
  });
  process.once("SIGINT", release);
  process.once("SIGTERM", release);
  options.signal?.addEventListener("abort", release, { once: true });
  try {
    await options.onReady?.(cluster);
    await stopped;
  } finally {
    process.off("SIGINT", release);
    process.off("SIGTERM", release);
    options.signal?.removeEventListener("abort", release);
    log("devcluster: stopping the local cluster");
    await cluster.stop();
  }
}
