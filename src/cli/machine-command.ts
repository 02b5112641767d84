/**
 * `opstask machine --format json|mermaid`: the task lifecycle machine, from its definition. JSON is
 * XState's definition (importable into Stately Studio); Mermaid is a state diagram of every edge with
 * its guard, the one the README shows.
 */
import { parseArgs } from "node:util";
import { machineEdges } from "../machine/edges.ts";
import { taskMachine } from "../machine/task-machine.ts";
import { OptionError } from "./options.ts";

const id = (path: string): string => path.replaceAll(".", "_");

/** Eventless edges are labelled by their guard; the unguarded one among guarded siblings is `else`. */
export const machineMermaid = (): string => {
  const edges = machineEdges();
  const lines = ["stateDiagram-v2", "  [*] --> idle"];
  for (const edge of edges) {
    const siblings = edges.filter((other) => other.from === edge.from && other.event === edge.event).length;
    const guard = edge.guard === undefined || edge.guard === "inline" ? undefined : edge.guard;
    const label =
      edge.event === "always"
        ? (guard ?? (siblings > 1 ? "else" : ""))
        : `${edge.event}${guard === undefined ? "" : ` [${guard}]`}`;
    lines.push(`  ${id(edge.from)} --> ${id(edge.to)}${label === "" ? "" : `: ${label}`}`);
  }
  return `${lines.join("\n")}\n`;
};

export const machineJson = (): string => `${JSON.stringify(taskMachine.toJSON(), null, 2)}\n`;

export const machineCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const { values } = parseArgs({
    args: [...argv],
    options: { format: { type: "string", default: "mermaid" } },
    strict: true,
  });
  const format = values.format;
  if (format !== "json" && format !== "mermaid") {
    throw new OptionError(`invalid value "${String(format)}" for --format: expected json | mermaid`);
  }
  process.stdout.write(format === "json" ? machineJson() : machineMermaid());
  return 0;
};
