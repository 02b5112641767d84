/**
 * `opstask crd --module <file> --export <name> [--output <file>]`: prints (or writes) the CRD that a
 * module exports as YAML, for `kubectl apply -f`. The export is what `taskCrd(kind, spec, options)`
 * returns (or a CustomResourceDefinition object), so the CRD comes from the same schema the
 * controller decodes with.
 */
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { crdYaml } from "../library/crd/crd-yaml.ts";
import type { CustomResourceDefinition } from "../library/crd/task-crd.ts";
import { OptionError } from "./options.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A `taskCrd` result or a CRD object → the CRD, or why the export is neither. */
export const crdOfExport = (
  value: unknown,
  name: string,
): { readonly crd: CustomResourceDefinition } | { readonly error: string } => {
  if (!isRecord(value)) return { error: `export ${name} is not an object (expected taskCrd(...)'s result)` };
  if (value.ok === false) {
    const errors = Array.isArray(value.errors) ? value.errors.map(String) : [];
    return { error: `export ${name} has no CRD:\n  ${errors.join("\n  ")}` };
  }
  const crd = value.ok === true ? value.crd : value;
  if (
    isRecord(crd) &&
    crd.kind === "CustomResourceDefinition" &&
    crd.apiVersion === "apiextensions.k8s.io/v1"
  ) {
    return { crd: crd as unknown as CustomResourceDefinition };
  }
  return { error: `export ${name} is not taskCrd(...)'s result nor a CustomResourceDefinition` };
};

const usage = `Usage: opstask crd --module <file> [--export <name>] [-o <file>]

Prints the CustomResourceDefinition a module exports as YAML: the result of taskCrd(kind, spec,
options) from opstask/crd, or a CRD object. A schema check with no exact CRD form is an error that
names its field, not a silently looser CRD.

  --module FILE   the module to load (.ts runs on Node 22.18 and later, .js anywhere)
  --export NAME   the export holding taskCrd(...)'s result (default crd)
  -o, --output F  write the YAML to F instead of standard output
  -h, --help      this text
`;

const parse = (argv: ReadonlyArray<string>) => {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        module: { type: "string" },
        export: { type: "string", default: "crd" },
        output: { type: "string", short: "o" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask crd --help'`);
  }
};

export const crdCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const values = parse(argv);
  if (values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  if (values.module === undefined) {
    throw new OptionError("--module <file> is required: the module that exports taskCrd(...)'s result");
  }
  let loaded: Record<string, unknown>;
  try {
    loaded = await import(pathToFileURL(resolve(values.module)).href);
  } catch (cause) {
    throw new OptionError(`cannot load --module ${values.module}: ${String(cause)}`);
  }
  if (!(values.export in loaded)) {
    const names = Object.keys(loaded).join(", ") || "none";
    throw new OptionError(
      `--export ${values.export}: ${values.module} has no such export (it has: ${names})`,
    );
  }
  const found = crdOfExport(loaded[values.export], values.export);
  if ("error" in found) {
    process.stderr.write(`opstask crd: ${found.error}\n`);
    return 1;
  }
  const text = crdYaml(found.crd, `opstask crd --module ${values.module} --export ${values.export}`);
  if (values.output === undefined) process.stdout.write(text);
  else await writeFile(values.output, text);
  return 0;
};
