/**
 * `node:http` loaded with `require`: an ES import of it builds its namespace from every export, and
 * since Node 22 three of them (`WebSocket`, `CloseEvent`, `MessageEvent`) load Node's bundled undici
 * when read, which the flagship never uses. Types still come from `import type … from "node:http"`.
 */
import type * as Http from "node:http";
import { createRequire } from "node:module";

export const http: typeof Http = createRequire(import.meta.url)("node:http");
