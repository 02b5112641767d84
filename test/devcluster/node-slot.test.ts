// The local node's address plan: everything in 198.18.0.0/15 (reserved for benchmarking, never
// routed), no two slots sharing an address, a subnet or a name, and host interface names the kernel
// accepts (at most 15 characters).
import { describe, expect, it } from "vitest";
import { SERVICE_CIDR } from "../../src/devcluster/node/network.ts";
import { MAX_SLOT, slotOf } from "../../src/devcluster/node/node-slot.ts";

const inBenchmarkRange = (address: string): boolean => {
  const [a, b, c, d] = address.split(".").map(Number);
  return a === 198 && (b === 18 || b === 19) && [c, d].every((x) => x !== undefined && x >= 0 && x <= 255);
};
const slots = Array.from({ length: MAX_SLOT }, (_, i) => slotOf(i + 1));

describe("node slots", () => {
  it("use only 198.18.0.0/15 for pods, Services, the veth and the node", () => {
    for (const slot of slots)
      for (const address of [
        slot.hostAddress,
        slot.nodeAddress,
        slot.gatewayAddress,
        slot.podCidr.split("/")[0] ?? "",
        slot.linkPrefix.split("/")[0] ?? "",
      ])
        expect(inBenchmarkRange(address), `${address} of slot ${slot.slot}`).toBe(true);
    expect(inBenchmarkRange(SERVICE_CIDR.split("/")[0] ?? "")).toBe(true);
  });

  it("never share an address, a subnet or a name", () => {
    for (const key of [
      "hostAddress",
      "nodeAddress",
      "podCidr",
      "linkPrefix",
      "netns",
      "hostInterface",
      "cgroupName",
    ] as const)
      expect(new Set(slots.map((slot) => slot[key])).size, key).toBe(slots.length);
    const podSubnets = new Set(slots.map((slot) => slot.podCidr));
    expect(podSubnets.has("198.18.255.0/24")).toBe(false); // the veths' /24
    expect(slots.every((slot) => !slot.podCidr.startsWith("198.19."))).toBe(true); // the Services'
  });

  it("put the veth's two ends in the slot's own /30", () => {
    for (const slot of slots) {
      const base = Number(slot.linkPrefix.split("/")[0]?.split(".")[3]);
      expect(Number(slot.hostAddress.split(".")[3])).toBe(base + 1);
      expect(Number(slot.nodeAddress.split(".")[3])).toBe(base + 2);
      expect(base % 4).toBe(0);
    }
  });

  it("name host interfaces within the kernel's 15 characters, its peer included", () => {
    for (const slot of slots) expect(`${slot.hostInterface}p`.length).toBeLessThanOrEqual(15);
  });
});
