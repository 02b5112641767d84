/**
 * `node:http`, loaded with `require` rather than an ES `import`.
 *
 * Importing a built-in as an ES module builds its namespace from every export, and since Node 22
 * `node:http` has lazy exports (`WebSocket`, `CloseEvent`, `MessageEvent`) that load Node's whole
 * bundled undici when read. Measured with Node 24 and `--jitless`: `import("node:http")` costs
 * +14.6 MB of RSS and 85 ms of CPU, `require("node:http")` +3.5 MB and 12 ms. The controller never
 * uses undici, so every module of opstask takes `node:http` from here (`node:https` has no such
 * exports and is imported as usual). Types still come from `import type { … } from "node:http"`.
 */
import type * as Http from "node:http";
import { createRequire } from "node:module";

export const http: typeof Http = createRequire(import.meta.url)("node:http");
