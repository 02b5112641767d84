// The node's network: a network namespace of its own, joined to the host by a veth pair on a /30
// of 198.18.255.0/24, with the pods' bridge on 198.18.<slot>.0/24 inside it. Everything the node's
// components change (kubelet's and kube-proxy's iptables chains, forwarding) stays in that namespace
// and goes with it. On the host there are only: the veth's host end (the kube-apiserver binds its
// address, so pods and the host both reach it), a route to the pods' subnet through the veth, and a
// blackhole route for 198.18.0.0/15 so that nothing in the test ranges ever follows the default route
// off the machine. The namespace has no default route: a pod can reach only its node, other pods and
// the host's end of the veth.
import { existsSync } from "node:fs";
import { sleep } from "../deadline.ts";
import { runCommand, tryCommand } from "./command.ts";
import type { NodeSlot } from "./node-slot.ts";

/** The Service range: the kube-apiserver's --service-cluster-ip-range (src/devcluster/kube-apiserver.ts). */
export const SERVICE_CIDR = "198.19.0.0/24";
/** The bridge inside the node's namespace (names there do not meet the host's). */
export const BRIDGE = "cni0";
const NODE_INTERFACE = "node0";

const ip = (args: readonly string[]) => runCommand("ip", args);
const inNode = (slot: NodeSlot, args: readonly string[]) => runCommand("ip", ["-n", slot.netns, ...args]);

/** Creates the namespace, the veth pair, the bridge and the routes. Undo with {@link removeNodeNetwork}. */
export async function createNodeNetwork(slot: NodeSlot): Promise<void> {
  const peer = `${slot.hostInterface}p`;
  await ip(["netns", "add", slot.netns]);
  await ip(["link", "add", slot.hostInterface, "type", "veth", "peer", "name", peer]);
  await ip(["link", "set", peer, "netns", slot.netns]);
  await inNode(slot, ["link", "set", peer, "name", NODE_INTERFACE]);
  await ip(["addr", "add", `${slot.hostAddress}/30`, "dev", slot.hostInterface]);
  await ip(["link", "set", slot.hostInterface, "up"]);
  await ip(["route", "add", "blackhole", "198.18.0.0/15", "metric", String(slot.blackholeMetric)]);
  await ip(["route", "add", slot.podCidr, "via", slot.nodeAddress, "dev", slot.hostInterface]);

  await inNode(slot, ["link", "set", "lo", "up"]);
  await inNode(slot, ["addr", "add", `${slot.nodeAddress}/30`, "dev", NODE_INTERFACE]);
  await inNode(slot, ["link", "set", NODE_INTERFACE, "up"]);
  // The CNI bridge plugin finds the bridge with its gateway address already there (isGateway false:
  // the plugin would otherwise switch on forwarding itself).
  await inNode(slot, ["link", "add", BRIDGE, "type", "bridge"]);
  await inNode(slot, ["addr", "add", `${slot.gatewayAddress}/24`, "dev", BRIDGE]);
  await inNode(slot, ["link", "set", BRIDGE, "up"]);
  // Processes of the node's namespace reach Services too: the route lookup comes before kube-proxy's
  // DNAT in OUTPUT, so the Service range needs a route (to the bridge; DNAT then picks the endpoint).
  await inNode(slot, ["route", "add", SERVICE_CIDR, "dev", BRIDGE, "src", slot.gatewayAddress]);
  // Forwarding between pods, the host's veth end and Service endpoints, in this namespace only.
  await runCommand("ip", ["netns", "exec", slot.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
}

/**
 * Deletes the namespace (its interfaces, the veth pair, its iptables rules and sysctls go with it)
 * and the host routes. Returns what could not be removed; missing pieces are not errors.
 */
export async function removeNodeNetwork(slot: NodeSlot): Promise<string[]> {
  const problems: string[] = [];
  const exists = async (args: readonly string[], pattern: RegExp) => {
    try {
      return pattern.test(await ip(args));
    } catch {
      return false;
    }
  };
  if (await exists(["route", "show", "exact", slot.podCidr], /\S/)) {
    const failed = await tryCommand("ip", ["route", "del", slot.podCidr]);
    if (failed !== undefined) problems.push(failed);
  }
  if (
    await exists(["route", "show", "exact", "198.18.0.0/15"], new RegExp(`metric ${slot.blackholeMetric}\\b`))
  ) {
    const failed = await tryCommand("ip", [
      "route",
      "del",
      "blackhole",
      "198.18.0.0/15",
      "metric",
      String(slot.blackholeMetric),
    ]);
    if (failed !== undefined) problems.push(failed);
  }
  if (existsSync(`/run/netns/${slot.netns}`)) {
    const failed = await tryCommand("ip", ["netns", "del", slot.netns]);
    if (failed !== undefined) problems.push(failed);
  }
  // The veth goes with the namespace (its peer was there), a moment after `netns del`.
  for (let waited = 0; existsSync(`/sys/class/net/${slot.hostInterface}`) && waited < 2000; waited += 50)
    await sleep(50);
  if (existsSync(`/sys/class/net/${slot.hostInterface}`)) {
    const failed = await tryCommand("ip", ["link", "del", slot.hostInterface]);
    if (failed !== undefined && !/Cannot find device|No such device/.test(failed)) problems.push(failed);
  }
  return problems;
}
