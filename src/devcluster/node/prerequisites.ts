// What the node needs from the machine, checked before anything is started: root (network
// namespaces, cgroups, mounts), Linux, and the packages of `scripts/system-deps node`.
import { existsSync } from "node:fs";
import { runCommand } from "./command.ts";
import { CNI_BIN_DIR } from "./containerd.ts";

const COMMANDS = ["containerd", "ctr", "runc", "ip", "iptables", "nsenter", "umount"] as const;
const CNI_PLUGINS = ["bridge", "host-local", "loopback"] as const;

export class NodePrerequisiteError extends Error {
  override readonly name = "NodePrerequisiteError";
}

export async function checkNodePrerequisites(): Promise<void> {
  if (process.platform !== "linux") throw new NodePrerequisiteError("the local node needs Linux");
  if (process.getuid?.() !== 0)
    throw new NodePrerequisiteError("the local node needs root (network namespaces, cgroups, mounts)");
  const missing: string[] = [];
  for (const command of COMMANDS) {
    try {
      await runCommand("sh", ["-c", `command -v ${command}`]);
    } catch {
      missing.push(command);
    }
  }
  for (const plugin of CNI_PLUGINS)
    if (!existsSync(`${CNI_BIN_DIR}/${plugin}`)) missing.push(`${CNI_BIN_DIR}/${plugin}`);
  if (missing.length > 0)
    throw new NodePrerequisiteError(
      `the local node needs ${missing.join(", ")}: run scripts/system-deps node`,
    );
}
