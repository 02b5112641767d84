# syntax=docker/dockerfile:1
# The opstask controller image: the CLI bundled and minified (scripts/bundle.ts: dependencies included,
# commands other than `controller` in chunks loaded on demand) on distroless Node 24. Running the
# TypeScript sources instead costs the controller ~20 MB more resident memory (`scripts/bench cluster`).
#
#   docker build -t opstask:0.1.0 .
#   docker run --rm opstask:0.1.0 controller --help
#
# The two bases are arguments so that a machine without registry access can build from base images
# it made itself: scripts/image-check builds this file with buildah from such bases
# (test/image/bases.sh) and runs the result with podman as deploy/deployment.yaml runs it.
#
# Pin both by digest for a release build: a tag can be moved, a digest names one image. They stay
# tags here only because no registry was reachable where this file was written to read the digests.
# To pin, take the digest of each tag's multi-arch index (every architecture then gets its own image)
#   crane digest node:24.21.0-bookworm-slim
#   crane digest gcr.io/distroless/nodejs24-debian12:nonroot
#   # or: skopeo inspect --raw docker://<ref> | sha256sum
# and write `<ref>@sha256:<digest>` below (the tag kept for readers), or pass it per build:
#   docker build --build-arg RUNTIME_BASE=gcr.io/distroless/nodejs24-debian12:nonroot@sha256:<digest> .
ARG BUILD_BASE=node:24.21.0-bookworm-slim
ARG RUNTIME_BASE=gcr.io/distroless/nodejs24-debian12:nonroot

# ---- build: npm ci (rolldown is a devDependency), then bundle src/cli/main.ts into dist/bundle -----
FROM ${BUILD_BASE} AS build
WORKDIR /app
ENV npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
# .npmrc sets engine-strict: the dependencies' engines are checked against this Node.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts
COPY src ./src
COPY scripts/bundle.ts ./scripts/
RUN node scripts/bundle.ts src/cli/main.ts dist/bundle

# ---- runtime: Node 24 only (no npm, no shell, no node_modules), as the distroless non-root user -----
FROM ${RUNTIME_BASE}
WORKDIR /app
ENV NODE_ENV=production
# package.json ("type": "module") makes Node load dist/bundle/*.js as ES modules.
COPY package.json ./
COPY --from=build /app/dist/bundle ./dist/bundle
# Numeric, so that the kubelet can verify `runAsNonRoot` (the Deployment sets the same IDs).
USER 65532:65532
# Secure metrics (HTTPS, authenticated) and the probes; `--metrics-secure=false` serves metrics on 8080.
EXPOSE 8443 8081
# --no-memory-reducer: V8 reads it only at start (NODE_OPTIONS refuses it). The controller keeps its heap
# near what is live while busy and returns a busy period's memory itself when it goes quiet
# (src/runtime/memory-return.ts, with the Deployment's --expose-gc) instead of V8's reducer, whose
# collections land seconds later in the idle time.
ENTRYPOINT ["/nodejs/bin/node", "--no-memory-reducer", "/app/dist/bundle/main.js"]
CMD ["controller"]
