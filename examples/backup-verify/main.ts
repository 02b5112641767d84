/**
 * The backup-verify operator as a process, with the CRD applied (`kubectl apply -f
 * examples/backup-verify/crd.yaml`): `node --conditions=opstask-source examples/backup-verify/main.ts`
 * (Node 24; the condition resolves "opstask" to this repository's src/). Watches every namespace, or
 * the comma-separated `NAMESPACES`; stops cleanly on SIGTERM/SIGINT.
 *
 * Where backups may be downloaded from is this process's configuration, not the tasks':
 * `BACKUP_VERIFY_ALLOWED_HOSTS` (required; `host` or `host:port`, comma-separated) and
 * `BACKUP_VERIFY_MAX_BYTES` (default 1 GiB). A bad or missing value stops the start, saying what to set.
 */
import * as Layer from "effect/Layer";
import { runTaskController } from "opstask";
import { backupVerificationKind } from "./backup-verification.ts";
import { downloadPolicyLayer, policyFromEnv } from "./download-policy.ts";
import { httpDownloaderLayer } from "./downloader-http.ts";
import { handlers } from "./handlers.ts";

const policy = policyFromEnv(process.env);
if (!policy.ok) {
  process.stderr.write(`backup-verify: ${policy.error}\n`);
  process.exit(2);
}
const namespaces = (process.env.NAMESPACES ?? "").split(",").filter((namespace) => namespace !== "");
const stopped = new AbortController();
process.once("SIGTERM", () => stopped.abort());
process.once("SIGINT", () => stopped.abort());

try {
  const controller = await runTaskController({
    kind: backupVerificationKind,
    handlers,
    services: httpDownloaderLayer.pipe(Layer.provideMerge(downloadPolicyLayer(policy.value))),
    ...(namespaces.length === 0 ? {} : { namespace: namespaces }),
    duplicatePolicy: process.env.DUPLICATE_POLICY === "queue" ? "queue" : "reject",
    logFormat: process.stdout.isTTY ? "logfmt" : "json",
    signal: stopped.signal,
  });
  await new Promise((resolve) => stopped.signal.addEventListener("abort", resolve, { once: true }));
  await controller.stop();
} catch (error) {
  // A stop before the caches synced is a stop, not a failure.
  if (!stopped.signal.aborted) throw error;
}
