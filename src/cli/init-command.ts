/**
 * `opstask init <dir> [--kind K] [--group G] [--version V] [--plural P] [--opstask SPEC]`: writes a
 * working operator project for a task kind of one's own (kind, handlers, main, a simulate() property
 * test and a real-API-server test, README saying where a new config member goes), which passes its own
 * tests once installed: `cd <dir> && npm install --ignore-scripts && npm test`. opstask itself comes
 * from a path, never the registry (init/opstask-dependency.ts says why).
 */
import { existsSync } from "node:fs";
import { copyFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { opstaskDependency } from "./init/opstask-dependency.ts";
import { type OpstaskManifest, projectFiles } from "./init/project-files.ts";
import { checkProjectNames, type ProjectNames, pluralOf } from "./init/project-names.ts";
import { OptionError } from "./options.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

const usage = `Usage: opstask init <dir> [options]

Writes a new operator project into <dir> (which must be empty or absent): src/kind.ts (the kind and
its spec schema), src/handlers.ts (Admit, Execute, Cleanup per config member), src/main.ts
(runTaskController), a simulate() property test, a real kube-apiserver test, package.json with the
scripts crd, deploy, test, typecheck and start, and a README. Then:
cd <dir> && npm install --ignore-scripts && npm test

  --kind NAME       the kind, PascalCase (default Webhook)
  --group GROUP     the API group, a DNS name with a dot (default ops.example.com)
  --version V       the API version (default v1alpha1)
  --plural NAME     the resource's plural (default: from the kind, e.g. webhooks)
  --name NAME       the npm package name (default: the directory's name)
  --opstask PATH    opstask's tarball (copied into <dir>/vendor/) or checkout (linked); not a
                    version range: the registry's "opstask" is not this project's (default: the
                    opstask-<version>.tgz npm pack left beside this opstask, else its directory)
  -h, --help        this text
`;

const parse = (argv: ReadonlyArray<string>) => {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        kind: { type: "string", default: "Webhook" },
        group: { type: "string", default: "ops.example.com" },
        version: { type: "string", default: "v1alpha1" },
        plural: { type: "string" },
        name: { type: "string" },
        opstask: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask init --help'`);
  }
};

/** This opstask's package.json (two directories above src/cli and dist/cli alike). */
const ownManifest = async (): Promise<OpstaskManifest> =>
  JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as OpstaskManifest;

export const initCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const { values, positionals } = parse(argv);
  if (values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  const [dir, ...extra] = positionals;
  if (dir === undefined) throw new OptionError("give the project's directory: opstask init <dir>");
  if (extra.length > 0) throw new OptionError(`one directory only, not also ${extra.join(" ")}`);
  const target = resolve(dir);
  if (existsSync(target) && (await readdir(target)).length > 0)
    throw new OptionError(`${dir} is not empty: give a new or empty directory`);
  const names: ProjectNames = {
    name: values.name ?? basename(target),
    kind: values.kind,
    group: values.group,
    version: values.version,
    plural: values.plural ?? pluralOf(values.kind),
  };
  const bad = checkProjectNames(names);
  if (bad !== undefined) throw new OptionError(bad.error);
  const manifest = await ownManifest();
  const dependency = opstaskDependency(values.opstask, manifest.version);
  if ("error" in dependency) throw new OptionError(dependency.error);
  const files = await projectFiles(names, manifest, dependency.spec);
  for (const file of files) {
    await mkdir(dirname(join(target, file.path)), { recursive: true });
    await writeFile(join(target, file.path), file.text);
  }
  if (dependency.copy !== undefined) {
    await mkdir(dirname(join(target, dependency.copy.to)), { recursive: true });
    await copyFile(dependency.copy.from, join(target, dependency.copy.to));
  }
  process.stdout.write(
    `Wrote ${files.length} files of ${names.kind} (${names.plural}.${names.group}/${names.version}) to ${dir}.\n` +
      `opstask: ${dependency.spec}\n` +
      `Next: cd ${dir} && npm install --ignore-scripts && npm test\n` +
      "A new config member goes in three places: see its README.md.\n",
  );
  return 0;
};
