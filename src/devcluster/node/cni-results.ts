// What the CNI library keeps outside the node's directory: containerd's CRI (1.6, no setting for it)
// caches each pod's ADD result in /var/lib/cni/results/<network>-<sandbox ID>-<interface>, one file
// for the pod's interface and one for its loopback. A CNI DEL removes them; a pod killed with its
// node never gets one, so the node's teardown removes the files of its own sandboxes.
import { existsSync, readdirSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";

export const CNI_CACHE_DIR = "/var/lib/cni";
const RESULTS_DIR = join(CNI_CACHE_DIR, "results");

/** The cached results of the given sandboxes (file names); sandbox IDs are 64 hex digits, never a prefix of another's. */
export function cniResultFiles(sandboxIds: ReadonlySet<string>): string[] {
  if (sandboxIds.size === 0 || !existsSync(RESULTS_DIR)) return [];
  return readdirSync(RESULTS_DIR).filter((name) => {
    const id = /-([0-9a-f]{64})-[^-]+$/.exec(name)?.[1];
    return id !== undefined && sandboxIds.has(id);
  });
}

/**
 * Removes the sandboxes' cached results; when no other node runs, also the cache's directories if
 * that leaves them empty. Returns what could not be removed.
 */
export function removeCniResults(sandboxIds: ReadonlySet<string>, lastNode: boolean): string[] {
  const problems: string[] = [];
  for (const name of cniResultFiles(sandboxIds)) {
    try {
      rmSync(join(RESULTS_DIR, name), { force: true });
    } catch (error) {
      problems.push(`${join(RESULTS_DIR, name)}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (lastNode) {
    for (const dir of [RESULTS_DIR, CNI_CACHE_DIR]) {
      try {
        if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
      } catch {
        // in use again
      }
    }
  }
  return problems;
}
