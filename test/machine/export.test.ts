import { instance } from "@viz-js/viz";
import { describe, expect, it } from "vitest";
import type { AnyStateNode } from "xstate";
import { machineEdges } from "../../src/machine/edges.ts";
import { edgeLabel, machineDot, machineMermaid, machineSvg } from "../../src/machine/export.ts";
import { taskMachine } from "../../src/machine/task-machine.ts";

const leaves = (node: AnyStateNode): string[] =>
  Object.values(node.states).flatMap((child) =>
    child.type === "compound" ? leaves(child) : [child.path.join(".")],
  );

/** `"from" -> "to" [label="…", …];` lines of the DOT export, as [from, to, label, dashed]. */
const dotEdges = (dot: string) =>
  [...dot.matchAll(/^ {2}"([^"]+)" -> "([^"]+)" \[label="([^"]*)"(, style=dashed)?/gm)].map(
    ([, from = "", to = "", label = "", dashed]) => [from, to, label, dashed !== undefined] as const,
  );

describe("machineDot", () => {
  const dot = machineDot();

  it("draws every edge of the machine, labelled as in the Mermaid export", () => {
    const edges = machineEdges();
    const fromMermaid = machineMermaid()
      .split("\n")
      .slice(2)
      .filter((line) => line !== "")
      .map((line) => {
        const [, from = "", to = "", label = ""] = /^ {2}(\S+) --> (\S+)(?:: (.*))?$/.exec(line) ?? [];
        return [from, to, label];
      });
    const drawn = dotEdges(dot).filter(([from]) => from !== "[*]");
    expect(drawn).toHaveLength(edges.length);
    expect(
      drawn.map(([from, to, label]) => [from.replaceAll(".", "_"), to.replaceAll(".", "_"), label]),
    ).toEqual(fromMermaid);
    expect(drawn.map(([, , , dashed]) => dashed)).toEqual(edges.map((edge) => edge.event === "always"));
  });

  it("labels guarded edges with their guard, the unguarded alternative `else`", () => {
    const drawn = dotEdges(dot);
    expect(drawn).toContainEqual(["route", "foreign", "writtenByNewerMachine", true]);
    expect(drawn).toContainEqual(["route", "claiming", "else", true]);
    expect(drawn).toContainEqual(["idle", "route", "reconcile", false]);
    expect(drawn).toContainEqual(["admission.calling", "execution.gate", "phase.completed", false]);
    const guarded = machineEdges().find((edge) => edge.guard === "pastDeadline");
    expect(guarded && edgeLabel(guarded, machineEdges())).toBe("pastDeadline");
  });

  it("declares every leaf state once, compound states as clusters, and starts at idle", () => {
    for (const leaf of leaves(taskMachine.root))
      expect(dot.match(new RegExp(`^ +"${leaf.replaceAll(".", "\\.")}" \\[label=`, "gm"))).toHaveLength(1);
    for (const cluster of ["admission", "execution", "deletion"])
      expect(dot).toContain(`subgraph "cluster_${cluster}" {`);
    expect(dot).toContain('"[*]" -> "idle";');
  });

  it("is valid Graphviz: it lays out without errors or warnings", async () => {
    const viz = await instance();
    const result = viz.render(dot, { format: "dot", engine: "dot" });
    expect(result.errors).toEqual([]);
    expect(result.status).toBe("success");
  });
});

describe("machineSvg", () => {
  it("renders the DOT export to SVG offline, one node per leaf state", async () => {
    const svg = await machineSvg();
    expect(svg).toMatch(/^<\?xml[^>]*>\s*<!DOCTYPE svg/);
    expect(svg).toContain("</svg>");
    for (const leaf of leaves(taskMachine.root)) expect(svg).toContain(`<title>${leaf}</title>`);
    expect(await machineSvg()).toBe(svg);
  });
});
