/**
 * `opstask machine --format json|mermaid|dot|svg`: the task lifecycle machine, from its definition.
 * JSON is XState's definition (importable into Stately Studio); Mermaid, DOT and SVG draw every edge
 * with its guard (the README's diagram is the Mermaid one).
 */
import { parseArgs } from "node:util";
import { machineDot, machineMermaid, machineSvg } from "../machine/export.ts";
import { taskMachine } from "../machine/task-machine.ts";
import { OptionError } from "./options.ts";

const formats = ["json", "mermaid", "dot", "svg"] as const;
type Format = (typeof formats)[number];

export const machineJson = (): string => `${JSON.stringify(taskMachine.toJSON(), null, 2)}\n`;

const render = (format: Format): Promise<string> | string => {
  switch (format) {
    case "json":
      return machineJson();
    case "mermaid":
      return machineMermaid();
    case "dot":
      return machineDot();
    case "svg":
      return machineSvg();
  }
};

export const machineCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const { values } = parseArgs({
    args: [...argv],
    options: { format: { type: "string", default: "mermaid" } },
    strict: true,
  });
  const format = formats.find((known) => known === values.format);
  if (format === undefined) {
    throw new OptionError(
      `invalid value "${String(values.format)}" for --format: expected ${formats.join(" | ")}`,
    );
  }
  process.stdout.write(await render(format));
  return 0;
};
