/**
 * The machine drawn from its edges (src/machine/edges.ts), for `opstask machine --format dot|svg`:
 * the same edges and labels as the Mermaid export, as Graphviz DOT, with compound states as clusters
 * and eventless edges dashed. SVG is DOT rendered by Graphviz compiled to WebAssembly (@viz-js/viz):
 * offline, no browser, loaded only when asked for.
 */
import type { AnyStateNode } from "xstate";
import { importOptional } from "../optional-package.ts";
import { type Edge, leafOf, machineEdges } from "./edges.ts";
import { taskMachine } from "./task-machine.ts";

/** The label the Mermaid export uses: `event [guard]`; eventless edges by guard, the unguarded one `else`. */
export const edgeLabel = (edge: Edge, edges: ReadonlyArray<Edge>): string => {
  const guard = edge.guard === undefined || edge.guard === "inline" ? undefined : edge.guard;
  if (edge.event !== "always") return `${edge.event}${guard === undefined ? "" : ` [${guard}]`}`;
  const siblings = edges.filter((other) => other.from === edge.from && other.event === edge.event).length;
  return guard ?? (siblings > 1 ? "else" : "");
};

const mermaidId = (path: string): string => path.replaceAll(".", "_");

/** A Mermaid state diagram of every edge (the lifecycle diagram of docs/architecture.md). */
export const machineMermaid = (): string => {
  const edges = machineEdges();
  const lines = ["stateDiagram-v2", "  [*] --> idle"];
  for (const edge of edges) {
    const label = edgeLabel(edge, edges);
    lines.push(`  ${mermaidId(edge.from)} --> ${mermaidId(edge.to)}${label === "" ? "" : `: ${label}`}`);
  }
  return `${lines.join("\n")}\n`;
};

const quote = (text: string): string => `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;

const pathOf = (node: AnyStateNode): string => node.path.join(".");

const nodeByPath = (path: string): AnyStateNode | undefined => {
  let node: AnyStateNode | undefined = taskMachine.root;
  for (const key of path === "" ? [] : path.split(".")) node = node?.states[key];
  return node;
};

export const machineDot = (): string => {
  const edges = machineEdges();
  const lines = [
    "digraph task {",
    "  compound=true;",
    "  rankdir=TB;",
    '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9];',
    '  "[*]" [shape=point, width=0.15, label=""];',
  ];
  const declare = (node: AnyStateNode, indent: string): void => {
    for (const child of Object.values(node.states)) {
      if (child.type === "compound") {
        lines.push(`${indent}subgraph ${quote(`cluster_${pathOf(child)}`)} {`);
        lines.push(`${indent}  label=${quote(child.key)}; style=rounded; fontname="Helvetica";`);
        declare(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}${quote(pathOf(child))} [label=${quote(child.key)}];`);
      }
    }
  };
  declare(taskMachine.root, "  ");
  lines.push(`  "[*]" -> ${quote(pathOf(leafOf(taskMachine.root)))};`);
  for (const edge of edges) {
    const attributes = [`label=${quote(edgeLabel(edge, edges))}`];
    if (edge.event === "always") attributes.push("style=dashed");
    // An edge from a compound state leaves its cluster (drawn from the leaf it is entered through).
    const from = nodeByPath(edge.from);
    const tail = from !== undefined && from.type === "compound" ? leafOf(from) : from;
    if (from !== undefined && from.type === "compound")
      attributes.push(`ltail=${quote(`cluster_${edge.from}`)}`);
    const source = tail === undefined ? edge.from : pathOf(tail);
    lines.push(`  ${quote(source)} -> ${quote(edge.to)} [${attributes.join(", ")}];`);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
};

interface Renderer {
  readonly renderString: (dot: string, options: { readonly format: "svg"; readonly engine: "dot" }) => string;
}
let renderer: Promise<Renderer> | undefined;

/**
 * The DOT export rendered to SVG. Asynchronous because Graphviz's WebAssembly module is instantiated
 * asynchronously (`@viz-js/viz`'s `instance()`); it is imported on the first call only.
 */
export const machineSvg = async (): Promise<string> => {
  renderer ??= importOptional("@viz-js/viz", "SVG rendering", () => import("@viz-js/viz")).then(
    ({ instance }) => instance(),
  );
  return (await renderer).renderString(machineDot(), { format: "svg", engine: "dot" });
};
