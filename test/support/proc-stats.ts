/**
 * CPU and memory of another process, from /proc (Linux): the same reading for a Go binary (etcd-druid)
 * and a Node process (opstask), so that their figures compare.
 */
import { readFileSync } from "node:fs";

export interface ProcSample {
  /** Resident set size now, bytes. */
  readonly rss: number;
  /** Peak resident set size since the process started (VmHWM), bytes. */
  readonly peakRss: number;
  /** User + system CPU time so far, ms. */
  readonly cpuMs: number;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux this runs on). */
const ticksPerSecond = 100;

const kib = (status: string, field: string): number => {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
  return match?.[1] === undefined ? Number.NaN : Number(match[1]) * 1024;
};

/** Undefined when the process is gone. */
export const procSample = (pid: number): ProcSample | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start at ") ": utime is field 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return {
      rss: kib(status, "VmRSS"),
      peakRss: kib(status, "VmHWM"),
      cpuMs: ((utime + stime) * 1000) / ticksPerSecond,
    };
  } catch {
    return undefined;
  }
};
