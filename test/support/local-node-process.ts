// A local cluster in a process of its own, for the test of what a run that dies leaves behind:
// prints one JSON line (the kubeconfig and the node's footprint) once ready, then waits to be killed.
//   node test/support/local-node-process.ts '<JSON of { nodeBinaries, sandboxImage, images }>'
import { type LocalImage, startLocalCluster } from "../../src/devcluster/node/local-cluster.ts";
import type { NodeBinaries } from "../../src/devcluster/node/node-binaries.ts";

const input = JSON.parse(process.argv[2] ?? "{}") as {
  readonly nodeBinaries: NodeBinaries;
  readonly sandboxImage: LocalImage;
  readonly images: readonly string[];
};
const cluster = await startLocalCluster({
  nodeBinaries: input.nodeBinaries,
  sandboxImage: input.sandboxImage,
  images: input.images,
});
process.stdout.write(
  `${JSON.stringify({ kubeconfigPath: cluster.kubeconfigPath, footprint: cluster.footprint })}\n`,
);
setInterval(() => {}, 60_000);
