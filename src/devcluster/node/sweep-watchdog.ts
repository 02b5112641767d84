// A detached watchdog per node: when the process that started the node dies without stopping it
// (SIGKILL, a crashed test worker, process.exit), it runs the sweep (sweep-main.ts) at once rather
// than leaving pods, mounts and the namespace to the next start. It ends by itself when the node's
// slot record is gone (a normal stop()).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const WATCHDOG = `
parent="$1"; record="$2"; node="$3"; sweep="$4"
while kill -0 "$parent" 2>/dev/null && [ -e "$record" ]; do sleep 1; done
[ -e "$record" ] && exec "$node" "$sweep"
exit 0
`;

export function startSweepWatchdog(recordFile: string): void {
  try {
    const watchdog = spawn(
      "bash",
      [
        "-c",
        WATCHDOG,
        "opstask-node-watchdog",
        String(process.pid),
        recordFile,
        process.execPath,
        fileURLToPath(new URL("./sweep-main.ts", import.meta.url)),
      ],
      { detached: true, stdio: "ignore" },
    );
    watchdog.on("error", () => {});
    watchdog.unref();
  } catch {
    // Best effort: the next start sweeps too.
  }
}
