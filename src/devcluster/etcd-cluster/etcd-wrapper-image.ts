// The lab's etcd-wrapper image: FROM scratch, the lab's stand-in for etcd-wrapper
// (testbin/etcd-wrapper-lab/main.go, standard library only) at /etcd-wrapper-lab as entrypoint and
// etcd 3.5 at /usr/local/bin/etcd, user 65532, HOME=/home/nonroot (where the member's configuration
// fetched from the sidecar is written). With it, a member's etcd starts as druid starts one: the
// backup-restore sidecar initializes the data directory first (validates it, restores a missing
// one from the store, adds a scale-up member as a learner) and serves the member's configuration.
//
// The stand-in is built here with `go build` (no module to download) and cached by its source's
// digest under ${OPSTASK_CACHE:-~/.cache/opstask}/testbin.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { defaultRepoRoot } from "../binaries.ts";
import { type BuiltImage, buildImage } from "../images/build-image.ts";
import { accountFiles, baseDirectories, type ImageRecipe, NonRootUser } from "../images/recipe.ts";

const run = promisify(execFile);

export const EtcdWrapperEntrypoint = "/etcd-wrapper-lab";

const cacheRoot = () => process.env.OPSTASK_CACHE ?? join(homedir(), ".cache", "opstask");

/** As scripts/testbin finds it: $GO, else go on PATH, else /usr/local/go/bin/go. */
const goCommand = (): string => {
  if (process.env.GO !== undefined && process.env.GO !== "") return process.env.GO;
  const onPath = (process.env.PATH ?? "")
    .split(delimiter)
    .map((dir) => join(dir, "go"))
    .find((path) => path !== "go" && existsSync(path));
  return onPath ?? "/usr/local/go/bin/go";
};

/** Builds testbin/etcd-wrapper-lab (or takes it from the cache); answers the binary's path. */
export const buildEtcdWrapperBinary = async (repoRoot = defaultRepoRoot()): Promise<string> => {
  const source = join(repoRoot, "testbin", "etcd-wrapper-lab");
  const digest = createHash("sha256")
    .update(readFileSync(join(source, "go.mod")))
    .update(readFileSync(join(source, "main.go")))
    .digest("hex")
    .slice(0, 12);
  const dir = join(cacheRoot(), "testbin");
  const binary = join(dir, `etcd-wrapper-lab-src-${digest}`);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.part`;
  try {
    await run(goCommand(), ["build", "-trimpath", "-o", partial, "."], {
      cwd: source,
      timeout: 600_000,
      env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod", GOWORK: "off" },
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(
      `go build of ${source} failed (set GO to the go command if it is not on PATH): ${stderr.trim() || String(error)}`,
    );
  }
  renameSync(partial, binary);
  return binary;
};

export const etcdWrapperRecipe = (wrapper: string, etcd: string): ImageRecipe => ({
  name: "etcd-wrapper-lab",
  // `etcd-wrapper-lab-src-<digest>` and `etcd35-v3.5.27`: both inputs name the version.
  version: `${/src-(\w+)$/.exec(wrapper)?.[1] ?? "local"}-etcd-${/-(v\d[\w.-]*)$/.exec(etcd)?.[1] ?? "local"}`,
  files: [
    { from: wrapper, to: EtcdWrapperEntrypoint, mode: 0o755 },
    { from: etcd, to: "/usr/local/bin/etcd", mode: 0o755 },
  ],
  texts: [...accountFiles],
  links: [],
  directories: [...baseDirectories],
  config: {
    entrypoint: [EtcdWrapperEntrypoint],
    env: { HOME: "/home/nonroot" },
    user: `${NonRootUser}:${NonRootUser}`,
    workdir: "/",
  },
});

/** The image, built or from the cache; `etcd` is the etcd 3.5 binary the lab's etcd image holds. */
export const buildEtcdWrapperImage = async (
  etcd: string,
  cacheDir: string,
  repoRoot?: string,
): Promise<BuiltImage> =>
  buildImage(etcdWrapperRecipe(await buildEtcdWrapperBinary(repoRoot), etcd), cacheDir);
