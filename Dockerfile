# syntax=docker/dockerfile:1
# The opstask controller image: the TypeScript sources compiled to JavaScript (running the sources with
# Node's type stripping costs ~30 MB of resident memory: measured by `scripts/bench cluster`), the
# production dependencies, and Node 24 on distroless.
#
#   docker build -t opstask:0.1.0 .
#   docker run --rm opstask:0.1.0 controller --help

# ---- build: tsc over src/ into dist/ ---------------------------------------------------------------
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
ENV npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

# ---- dependencies: npm ci without devDependencies (no TypeScript, vitest, biome) --------------------
FROM node:24.21.0-bookworm-slim AS deps
WORKDIR /app
ENV NODE_ENV=production \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
# .npmrc sets engine-strict: the dependencies' engines are checked against this Node.
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --ignore-scripts \
 && npm cache clean --force

# ---- runtime: Node 24 only (no npm, no shell), as the distroless non-root user ---------------------
FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
# package.json ("type": "module") makes Node load dist/**/*.js as ES modules.
COPY package.json ./
COPY --from=build /app/dist ./dist
# Numeric, so that the kubelet can verify `runAsNonRoot` (the Deployment sets the same IDs).
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
CMD ["controller"]
