// The lab's S3-compatible object store image: FROM scratch plus the static gofakes3 server
// (testbin/gofakes3, built by `scripts/testbin node`) at /gofakes3, entrypoint /gofakes3, user
// 65532. It keeps what it stores in memory: no volume, a read-only root filesystem will do.
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { defaultRepoRoot, runTestbinScript } from "../binaries.ts";
import { type BuiltImage, buildImage } from "./build-image.ts";
import { accountFiles, baseDirectories, type ImageRecipe, NonRootUser } from "./recipe.ts";

/** The S3 port the server listens on (its `-listen`). */
export const ObjectStorePort = 9000;

export const objectStoreRecipe = (gofakes3: string): ImageRecipe => ({
  name: "gofakes3",
  // `gofakes3-v1.2.0-src-<hash of main.go>` → `v1.2.0-src-<hash>`.
  version: /-(v\d[\w.-]*)$/.exec(basename(gofakes3))?.[1] ?? "local",
  files: [{ from: gofakes3, to: "/gofakes3", mode: 0o755 }],
  texts: [...accountFiles],
  links: [],
  directories: [...baseDirectories],
  config: {
    entrypoint: ["/gofakes3"],
    cmd: [`-listen=:${ObjectStorePort}`],
    env: {},
    user: `${NonRootUser}:${NonRootUser}`,
    workdir: "/",
  },
});

/** The gofakes3 binary from scripts/testbin's cache; fails naming what to build. */
export const resolveObjectStoreBinary = async (repoRoot = defaultRepoRoot()): Promise<string> => {
  const checked = await runTestbinScript(["--check", "node"], { repoRoot, timeoutMs: 30_000 });
  const found = checked.paths.get("gofakes3");
  if (found === undefined || !existsSync(found))
    throw new Error(
      `the gofakes3 binary is not built (${found ?? "unknown path"}): run scripts/testbin node`,
    );
  return found;
};

/** The object store's image, built or from the cache. */
export const buildObjectStoreImage = async (cacheDir: string, repoRoot?: string): Promise<BuiltImage> =>
  buildImage(objectStoreRecipe(await resolveObjectStoreBinary(repoRoot)), cacheDir);
