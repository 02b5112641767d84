/**
 * The lab's backup-restore sidecars as host processes, to freeze them (SIGSTOP) while a snapshot POST
 * is in flight, and to see that POST waiting at them.
 */
import { readFileSync } from "node:fs";
import { cgroupProcesses } from "../../../src/devcluster/node/cgroups.ts";
import type { Lab } from "./lab.ts";

/** The PIDs of the node's `etcdbrctl server` processes (the backup-restore sidecars). */
export const sidecarProcesses = (lab: Lab): number[] =>
  cgroupProcesses(lab.cluster.footprint.cgroupName).filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv.some((arg) => arg.endsWith("etcdbrctl")) && argv.includes("server");
    } catch {
      return false;
    }
  });

/**
 * Requests waiting unread on port 8080 (the sidecars' server) in the sidecars' network namespaces:
 * established connections with bytes in their receive queue. A frozen server's kernel still accepts
 * the connection and the POST, so a POST in flight shows here; an idle keep-alive connection does not.
 */
export const unreadRequests = (pids: readonly number[]): number =>
  pids
    .flatMap((pid) =>
      ["tcp", "tcp6"].flatMap((table) => {
        try {
          return readFileSync(`/proc/${pid}/net/${table}`, "utf8").split("\n").slice(1);
        } catch {
          return [];
        }
      }),
    )
    .map((line) => line.trim().split(/\s+/))
    .filter(
      ([, local, , state, queues]) =>
        local?.endsWith(":1F90") && state === "01" && Number.parseInt(queues?.split(":")[1] ?? "0", 16) > 0,
    ).length;
