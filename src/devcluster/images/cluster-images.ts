// The images the local cluster runs, each FROM scratch plus static binaries (no registry is
// reachable, and nothing else is needed):
//
//   pause      the pod sandbox (testbin/pause), entrypoint /pause
//   busybox    Debian's busybox-static at /bin/busybox, every applet a relative link to it; a shell
//              and small tools for test pods (its wget segfaults in a scratch image: static glibc
//              and NSS; use nc)
//   etcd       etcd 3.5 at /usr/local/bin/etcd, the version etcd-backup-restore v0.43 is built
//              against (scripts/testbin etcdbrctl builds both), entrypoint etcd, user 65532
//   etcdbrctl  etcd-backup-restore at /etcdbrctl, entrypoint /etcdbrctl, user 65532, as upstream's
//              image (distroless static nonroot): the backup sidecar and the compaction Job's image
//
// The opstask image itself comes from the project's Dockerfile (opstask-image.ts).
import { execFileSync } from "node:child_process";
import { basename } from "node:path";
import { accountFiles, baseDirectories, type ImageRecipe, NonRootUser, type SymbolicLink } from "./recipe.ts";

export interface ClusterImageBinaries {
  readonly pause: string;
  /** A statically linked busybox (Debian's busybox-static installs /bin/busybox). */
  readonly busybox: string;
  /** etcd 3.5 (scripts/testbin's etcd35). */
  readonly etcd: string;
  readonly etcdbrctl: string;
}

/** The version in a testbin binary's name (`etcd35-v3.5.27` → `v3.5.27`), else `local`. */
const versionOf = (path: string): string => /-(v\d[\w.-]*)$/.exec(basename(path))?.[1] ?? "local";

const nonRoot = `${NonRootUser}:${NonRootUser}`;

export const pauseRecipe = (pause: string): ImageRecipe => ({
  name: "pause",
  version: "3.10",
  files: [{ from: pause, to: "/pause", mode: 0o755 }],
  texts: [],
  links: [],
  directories: [],
  config: { entrypoint: ["/pause"], env: {}, user: "65535:65535" },
});

/** The applets a busybox binary provides (`busybox --list`), each as a relative link in /bin. */
export const busyboxApplets = (busybox: string): ReadonlyArray<string> =>
  execFileSync(busybox, ["--list"], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim())
    .filter((applet) => /^[\w.[-]+$/.test(applet) && applet !== "busybox")
    .sort();

export const busyboxRecipe = (busybox: string): ImageRecipe => {
  const version = /BusyBox (v[\d.]+)/.exec(execFileSync(busybox, ["--help"], { encoding: "utf8" }))?.[1];
  // Relative targets: Debian's `busybox --install -s` links to /usr/bin/busybox (merged /usr), a path
  // this image does not have.
  const links: SymbolicLink[] = busyboxApplets(busybox).map((applet) => ({
    to: `/bin/${applet}`,
    target: "busybox",
  }));
  return {
    name: "busybox",
    version: version ?? "local",
    files: [{ from: busybox, to: "/bin/busybox", mode: 0o755 }],
    texts: [...accountFiles],
    links,
    directories: [...baseDirectories],
    config: { cmd: ["/bin/sh"], env: { PATH: "/bin" } },
  };
};

export const etcdRecipe = (etcd: string): ImageRecipe => ({
  name: "etcd",
  version: versionOf(etcd),
  files: [{ from: etcd, to: "/usr/local/bin/etcd", mode: 0o755 }],
  texts: [...accountFiles],
  links: [],
  directories: [...baseDirectories, { to: "/var/etcd", mode: 0o755, uid: NonRootUser, gid: NonRootUser }],
  config: {
    entrypoint: ["/usr/local/bin/etcd"],
    env: { PATH: "/usr/local/bin" },
    user: nonRoot,
    workdir: "/",
  },
});

export const etcdbrctlRecipe = (etcdbrctl: string): ImageRecipe => ({
  name: "etcdbrctl",
  version: versionOf(etcdbrctl),
  files: [{ from: etcdbrctl, to: "/etcdbrctl", mode: 0o755 }],
  texts: [...accountFiles],
  links: [],
  directories: [...baseDirectories],
  config: {
    entrypoint: ["/etcdbrctl"],
    env: { HOME: "/home/nonroot" },
    user: nonRoot,
    workdir: "/",
  },
});

export const clusterImageRecipes = (binaries: ClusterImageBinaries) => ({
  pause: pauseRecipe(binaries.pause),
  busybox: busyboxRecipe(binaries.busybox),
  etcd: etcdRecipe(binaries.etcd),
  etcdbrctl: etcdbrctlRecipe(binaries.etcdbrctl),
});
