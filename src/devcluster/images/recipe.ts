// An image as data: the files of its root filesystem and its configuration. Images of the local
// cluster are built FROM scratch from such a recipe (build-image.ts), so what goes in is exactly what
// the recipe lists, and the recipe's digest (its JSON and the content of every file it copies) names
// the image: the same inputs give the same tag and, with a fixed timestamp, the same image ID.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/** A file copied from this machine into the image. */
export interface CopiedFile {
  readonly from: string;
  readonly to: string;
  readonly mode: number;
}

/** A file written from text. */
export interface TextFile {
  readonly to: string;
  readonly content: string;
  readonly mode: number;
}

/** A symbolic link `to` → `target` (relative targets keep the image independent of where it runs). */
export interface SymbolicLink {
  readonly to: string;
  readonly target: string;
}

/** A directory with its mode and owner (e.g. /tmp 1777, a non-root user's home). */
export interface Directory {
  readonly to: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
}

export interface ImageConfig {
  readonly entrypoint?: ReadonlyArray<string>;
  readonly cmd?: ReadonlyArray<string>;
  readonly env: Readonly<Record<string, string>>;
  /** `uid:gid`, numeric, so that the kubelet can check `runAsNonRoot`. */
  readonly user?: string;
  readonly workdir?: string;
}

export interface ImageRecipe {
  /** The image's name under `localhost/opstask-lab/`. */
  readonly name: string;
  /** What the image holds, for people (e.g. the etcd version); the tag adds the digest. */
  readonly version: string;
  readonly files: ReadonlyArray<CopiedFile>;
  readonly texts: ReadonlyArray<TextFile>;
  readonly links: ReadonlyArray<SymbolicLink>;
  readonly directories: ReadonlyArray<Directory>;
  readonly config: ImageConfig;
}

/** The registry-less repository every image of the local cluster is named under. */
export const ImageRepository = "localhost/opstask-lab";

/** Bumped when the way recipes become images changes, so that cached archives are rebuilt. */
const BuilderVersion = "1";

/** sha256 over the recipe and the bytes of every file it copies. */
export const recipeDigest = (recipe: ImageRecipe): string => {
  const hash = createHash("sha256");
  hash.update(JSON.stringify({ BuilderVersion, recipe }));
  for (const file of recipe.files) hash.update(readFileSync(file.from));
  return hash.digest("hex");
};

/** `localhost/opstask-lab/<name>:<version>-<12 hex digits of the digest>`. */
export const imageReference = (recipe: ImageRecipe, digest: string): string =>
  `${ImageRepository}/${recipe.name}:${recipe.version}-${digest.slice(0, 12)}`;

/** Minimal /etc/passwd and /etc/group: root, and druid's and distroless's non-root user 65532. */
export const NonRootUser = 65532;
export const accountFiles: ReadonlyArray<TextFile> = [
  {
    to: "/etc/passwd",
    content: `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${NonRootUser}:${NonRootUser}:nonroot:/home/nonroot:/sbin/nologin\n`,
    mode: 0o644,
  },
  { to: "/etc/group", content: `root:x:0:\nnonroot:x:${NonRootUser}:\n`, mode: 0o644 },
];

/** /tmp (world-writable, sticky) and the non-root user's home, as distroless has them. */
export const baseDirectories: ReadonlyArray<Directory> = [
  { to: "/tmp", mode: 0o1777, uid: 0, gid: 0 },
  { to: "/home/nonroot", mode: 0o700, uid: NonRootUser, gid: NonRootUser },
];
