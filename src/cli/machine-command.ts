/**
 * `opstask machine --format json|mermaid|dot|svg`: the task lifecycle machine, from its definition.
 * JSON is XState's definition (importable into Stately Studio); Mermaid, DOT and SVG draw every edge
 * with its guard (docs/architecture.md's diagram is the Mermaid one).
 */
import { parseArgs } from "node:util";
import { machineDot, machineMermaid, machineSvg } from "../machine/export.ts";
import { taskMachine } from "../machine/task-machine.ts";
import { OptionError } from "./options.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

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

const usage = `Usage: opstask machine [--format json|mermaid|dot|svg]

Prints the task lifecycle machine, from its definition: mermaid (default; the README's diagram),
dot and svg (Graphviz; every edge with its guard), or json (XState's definition, importable into
Stately Studio).

  --format FORMAT   json | mermaid | dot | svg (default mermaid)
  -h, --help        this text
`;

const parse = (argv: ReadonlyArray<string>) => {
  try {
    return parseArgs({
      args: [...argv],
      options: { format: { type: "string", default: "mermaid" }, help: { type: "boolean", short: "h" } },
      strict: true,
    }).values;
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask machine --help'`);
  }
};

export const machineCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const values = parse(argv);
  if (values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  const format = formats.find((known) => known === values.format);
  if (format === undefined) {
    throw new OptionError(
      `invalid value "${String(values.format)}" for --format: expected ${formats.join(" | ")}`,
    );
  }
  process.stdout.write(await render(format));
  return 0;
};
