// The node's own cgroup: the kubelet's cgroupRoot, so that its pods live under
// /sys/fs/cgroup/<controller>/<name>/kubepods… and not beside another node's (two kubelets sharing
// /kubepods would each remove the other's pods as orphans). At the end every process left in it is
// killed and the tree removed.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

const CGROUP_ROOT = "/sys/fs/cgroup";

/** The cgroup v1 hierarchies (or the single v2 tree) mounted on this machine. */
function hierarchies(): string[] {
  if (existsSync(join(CGROUP_ROOT, "cgroup.controllers"))) return [CGROUP_ROOT];
  return readdirSync(CGROUP_ROOT)
    .map((name) => join(CGROUP_ROOT, name))
    .filter((path) => {
      try {
        return statSync(path).isDirectory() && existsSync(join(path, "cgroup.procs"));
      } catch {
        return false;
      }
    });
}

/** Creates the cgroup in every hierarchy (cpuset's first: it needs cpus and mems before tasks). */
export function createNodeCgroup(name: string): void {
  for (const hierarchy of hierarchies()) {
    const dir = join(hierarchy, name);
    if (!existsSync(dir)) mkdirSync(dir);
    for (const file of ["cpuset.cpus", "cpuset.mems"]) {
      const parent = join(hierarchy, file);
      if (existsSync(parent)) writeFileSync(join(dir, file), readFileSync(parent, "utf8").trim());
    }
  }
}

/** Every cgroup directory of the tree, deepest first. */
function treeDeepestFirst(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const below = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => treeDeepestFirst(join(dir, entry.name)));
  return [...below, dir];
}

/** PIDs of every process in the node's cgroup, in any hierarchy. */
export function cgroupProcesses(name: string): number[] {
  const pids = new Set<number>();
  for (const hierarchy of hierarchies()) {
    for (const dir of treeDeepestFirst(join(hierarchy, name))) {
      try {
        for (const line of readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n"))
          if (line.trim() !== "") pids.add(Number(line));
      } catch {
        // removed meanwhile
      }
    }
  }
  return [...pids];
}

/** Removes the tree in every hierarchy (empty cgroups only); returns what could not be removed. */
export function removeNodeCgroup(name: string): string[] {
  const problems: string[] = [];
  for (const hierarchy of hierarchies()) {
    for (const dir of treeDeepestFirst(join(hierarchy, name))) {
      try {
        rmdirSync(dir);
      } catch (err) {
        problems.push(`rmdir ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
    }
  }
  return problems;
}
