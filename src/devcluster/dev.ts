// `opstask dev` building block: run a local control plane in the foreground until SIGINT/SIGTERM
// (or an abort signal), with a kubeconfig at a stable path.
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from "./control-plane.ts";

export interface DevClusterOptions extends ControlPlaneOptions {
  readonly kubeconfigPath: string;
  /** Called once the control plane is ready (e.g. to start the controller against it). */
  readonly onReady?: (plane: ControlPlane) => void | Promise<void>;
  readonly signal?: AbortSignal;
}

export async function runDevCluster(options: DevClusterOptions): Promise<void> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const plane = await startControlPlane({ ...options, log });
  log(`devcluster: export KUBECONFIG=${plane.kubeconfigPath}  (server ${plane.server}; Ctrl-C stops)`);
  let release: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    release = resolve;
  });
  const onSignal = (): void => release();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  options.signal?.addEventListener("abort", onSignal, { once: true });
  try {
    await options.onReady?.(plane);
    await stopped;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    options.signal?.removeEventListener("abort", onSignal);
    log("devcluster: stopping");
    await plane.stop();
  }
}
