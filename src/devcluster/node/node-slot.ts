// The slot a local node runs in: a number 1..63 that names everything the node adds to the host
// (network namespace, host interface, cgroup, addresses), so that several nodes (other sessions,
// parallel test files) can run on one machine without meeting. A slot is taken by creating its
// record file exclusively; the record names the owner's PID and everything to undo, so that a later
// run can clean up after an owner that died without cleaning up (teardown.ts).
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** Where slot records live (tmpfs: a reboot forgets them along with what they describe). */
export const SLOT_DIR = "/run/opstask-node";
export const MAX_SLOT = 63;

/** The addresses and names of one slot; all addresses are inside 198.18.0.0/15. */
export interface NodeSlot {
  readonly slot: number;
  /** Network namespace of containerd, kubelet, kube-proxy, CoreDNS and the pods' bridge. */
  readonly netns: string;
  /** Host end of the veth pair into the node's namespace. */
  readonly hostInterface: string;
  /** Its address: the kube-apiserver binds it. */
  readonly hostAddress: string;
  /** The node's end (inside the namespace): the node's InternalIP. */
  readonly nodeAddress: string;
  /** /30 of the veth pair. */
  readonly linkPrefix: string;
  /** The pods' subnet on the node's bridge. */
  readonly podCidr: string;
  /** The bridge's address: the pods' gateway and CoreDNS's address. */
  readonly gatewayAddress: string;
  /** Metric of this slot's host blackhole route for 198.18.0.0/15. */
  readonly blackholeMetric: number;
  /** cgroup (in every v1 hierarchy, or the v2 tree) the kubelet puts pods under. */
  readonly cgroupName: string;
}

export interface SlotRecord extends NodeSlot {
  readonly ownerPid: number;
  /** The owner's start time (/proc/<pid>/stat), so that a reused PID is not taken for the owner. */
  readonly ownerStart: string | undefined;
  /** The node's scratch directory (containerd root/state, kubelet root, configs). */
  readonly dir: string;
  /**
   * Whether /run/netns was a mount point before this node (`ip netns add` turns it into one, for
   * good): if not, the last node to stop unmounts it.
   */
  readonly netnsDirMounted: boolean;
  /** Host sysctls as they were before the kubelet started (it changes some). */
  readonly sysctls?: Readonly<Record<string, string>>;
}

export const slotOf = (slot: number): NodeSlot => ({
  slot,
  netns: `opstask-node-${slot}`,
  hostInterface: `otn${slot}`,
  hostAddress: `198.18.255.${4 * slot + 1}`,
  nodeAddress: `198.18.255.${4 * slot + 2}`,
  linkPrefix: `198.18.255.${4 * slot}/30`,
  podCidr: `198.18.${slot}.0/24`,
  gatewayAddress: `198.18.${slot}.1`,
  blackholeMetric: 4000 + slot,
  cgroupName: `opstask-node-${slot}`,
});

export const slotRecordPath = (slot: number): string => join(SLOT_DIR, `slot-${slot}.json`);

export function readSlotRecords(): SlotRecord[] {
  let names: string[];
  try {
    names = readdirSync(SLOT_DIR);
  } catch {
    return [];
  }
  const records: SlotRecord[] = [];
  for (const name of names) {
    if (!/^slot-\d+\.json$/.test(name)) continue;
    try {
      records.push(JSON.parse(readFileSync(join(SLOT_DIR, name), "utf8")) as SlotRecord);
    } catch {
      // Being written right now by its owner; the next sweep sees it.
    }
  }
  return records;
}

/** Takes the lowest free slot (exclusive create of its record); undefined when all are taken. */
export function claimSlot(ownerPid: number, dir: string): SlotRecord | undefined {
  mkdirSync(SLOT_DIR, { recursive: true, mode: 0o755 });
  const running = readSlotRecords().find(ownerAlive);
  for (let slot = 1; slot <= MAX_SLOT; slot++) {
    const record: SlotRecord = {
      ...slotOf(slot),
      ownerPid,
      ownerStart: processStart(ownerPid),
      dir,
      // Beside running nodes /run/netns is theirs already: take what the first of them found.
      netnsDirMounted: running?.netnsDirMounted ?? isMountPoint("/run/netns"),
    };
    let fd: number;
    try {
      fd = openSync(slotRecordPath(slot), "wx", 0o644);
    } catch {
      continue;
    }
    try {
      writeFileSync(fd, JSON.stringify(record));
    } finally {
      closeSync(fd);
    }
    return record;
  }
  return undefined;
}

export function updateSlotRecord(record: SlotRecord): void {
  writeFileSync(slotRecordPath(record.slot), JSON.stringify(record));
}

export function releaseSlot(slot: number): void {
  rmSync(slotRecordPath(slot), { force: true });
  try {
    rmdirSync(SLOT_DIR);
  } catch {
    // another node's record is there
  }
}

export function isMountPoint(path: string): boolean {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .some((line) => line.split(" ")[4] === path);
}

/** A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat). */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Whether the process that claimed the slot still runs. */
export function ownerAlive(record: SlotRecord): boolean {
  const start = processStart(record.ownerPid);
  return start !== undefined && (record.ownerStart === undefined || start === record.ownerStart);
}
