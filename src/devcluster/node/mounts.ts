// Mounts the node leaves when it is stopped hard: container root filesystems, sandbox /dev/shm and
// volume tmpfs under its scratch directory, and the pods' network namespaces (bind mounts of nsfs
// under /run/netns, outside that directory: their paths are read from the sandboxes' OCI specs).
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tryCommand } from "./command.ts";

/** Mount points at or below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(prefix)))
    .map((point) => point.replace(/\\040/g, " "));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything below `dir` (lazily, so a busy mount cannot stop the clean-up). */
export async function unmountUnder(dir: string): Promise<string[]> {
  const problems: string[] = [];
  for (const point of mountsUnder(dir)) {
    const failed = await tryCommand("umount", ["-l", point]);
    if (failed !== undefined) problems.push(failed);
  }
  return problems;
}

/** Bundle directories of containerd's runc shim tasks in the `k8s.io` namespace: `<state>/…/<id>`. */
export function taskBundles(containerdState: string): { readonly id: string; readonly dir: string }[] {
  const base = join(containerdState, "io.containerd.runtime.v2.task", "k8s.io");
  if (!existsSync(base)) return [];
  return readdirSync(base).map((id) => ({ id, dir: join(base, id) }));
}

/** The network namespace files (under /run/netns) that the node's pod sandboxes were given. */
export function podNetworkNamespaces(containerdState: string): string[] {
  const paths = new Set<string>();
  for (const bundle of taskBundles(containerdState)) {
    try {
      const spec = JSON.parse(readFileSync(join(bundle.dir, "config.json"), "utf8")) as {
        linux?: { namespaces?: { type?: string; path?: string }[] };
      };
      for (const ns of spec.linux?.namespaces ?? [])
        if (ns.type === "network" && ns.path?.startsWith("/run/netns/") === true) paths.add(ns.path);
        else if (ns.type === "network" && ns.path?.startsWith("/var/run/netns/") === true)
          paths.add(ns.path.replace(/^\/var/, ""));
    } catch {
      // No spec (the task was being created): nothing of it to undo.
    }
  }
  return [...paths];
}

/** Unmounts and removes pod network namespace files. */
export async function removeNetworkNamespaceFiles(paths: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const path of paths) {
    if (!existsSync(path)) continue;
    await tryCommand("umount", ["-l", path]);
    try {
      rmSync(path, { force: true });
    } catch (err) {
      problems.push(`rm ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}
