// Host-wide kernel settings the kubelet changes when it starts (protectKernelDefaults false, and true
// would make it fail on a machine with other values): read before, written back at the end by the
// last node to stop. A node starting beside running ones takes their record's values: what it would
// read now is what their kubelets wrote.
import { readFileSync, writeFileSync } from "node:fs";

/** What kubelet's setupKernelTunables writes (not per network namespace: they are the host's). */
export const KUBELET_SYSCTLS = [
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
] as const;

export function readSysctls(): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of KUBELET_SYSCTLS) {
    try {
      values[name] = readFileSync(`/proc/sys/${name}`, "utf8").trim();
    } catch {
      // Not on this kernel.
    }
  }
  return values;
}

/** Writes back the values that differ now; returns what could not be written. */
export function restoreSysctls(before: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(before)) {
    try {
      if (readFileSync(`/proc/sys/${name}`, "utf8").trim() !== value)
        writeFileSync(`/proc/sys/${name}`, value);
    } catch (err) {
      problems.push(`sysctl ${name}=${value}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}
