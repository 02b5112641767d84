/**
 * `node:http`, loaded with `require`: an ES import reads its lazy exports (`WebSocket`, …), which load
 * Node's bundled undici, which the controller never uses (what it costs: bench/PROFILE.md, "Node's
 * bundled undici"). Every module of opstask takes `node:http` from here; types still come from
 * `import type { … } from "node:http"`, and `node:https` is imported as usual.
 */
import type * as Http from "node:http";
import { createRequire } from "node:module";

export const http: typeof Http = createRequire(import.meta.url)("node:http");
