/**
 * Step 4 of docs/library.md: the operator as a process. Apply the CRD first
 * (`npx opstask crd --module greeting.ts --export crd | kubectl apply -f -`), then `node main.ts`.
 * The cluster is the in-cluster service account, else `$KUBECONFIG` or `~/.kube/config`.
 * SIGTERM or SIGINT stops it cleanly.
 */
import { runTaskController } from "opstask";
import { greetingKind } from "./greeting.ts";
import { handlers } from "./handlers.ts";

const stopped = new AbortController();
process.once("SIGTERM", () => stopped.abort());
process.once("SIGINT", () => stopped.abort());

try {
  const controller = await runTaskController({ kind: greetingKind, handlers, signal: stopped.signal });
  await new Promise((resolve) => stopped.signal.addEventListener("abort", resolve, { once: true }));
  await controller.stop();
} catch (error) {
  // A stop before the caches synced is a stop, not a failure.
  if (!stopped.signal.aborted) throw error;
}
