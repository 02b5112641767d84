/**
 * The Node settings of a kind's generated Deployment, the flagship's (deploy/deployment.yaml; a test
 * compares the two) but for `--jitless`: bounded V8 heaps, two malloc arenas, V8's size-over-speed
 * heuristics, and the heap kept by the controller itself, near what is live while busy and given back
 * when it goes quiet (runtime/memory-return.ts: `gc` exposed, V8's timed memory reducer off).
 *
 * `--jitless` turns WebAssembly off with the optimizing compiler. The flagship runs without
 * WebAssembly (its HTTP is node:http); an operator's handlers need not: Node's global `fetch` parses
 * HTTP with WebAssembly (undici's llhttp), and so does any package built on it, and Node running
 * TypeScript sources strips their types with it. So a kind's controller keeps its JIT; one whose code needs no
 * WebAssembly can add `--jitless` (`deploy-artifacts --env NODE_OPTIONS=...`) to trade CPU for memory.
 */
import { v8FlagsVariable } from "../v8-flags.ts";

/** The container's environment (NODE_OPTIONS takes only Node's allowed V8 flags). */
export const tunedNodeEnv: Readonly<Record<string, string>> = {
  NODE_OPTIONS: "--max-old-space-size=128 --max-semi-space-size=1 --expose-gc",
  MALLOC_ARENA_MAX: "2",
};

/** What the flagship's NODE_OPTIONS has and a kind's leaves out (see above). */
export const flagshipOnlyNodeOptions: ReadonlyArray<string> = ["--jitless"];

/**
 * V8 flags NODE_OPTIONS does not take. `opstask controller` applies them from OPSTASK_V8_FLAGS; a
 * kind's own image passes them on node's command line (its ENTRYPOINT).
 */
export const tunedV8Flags: ReadonlyArray<string> = ["--optimize-for-size"];

/**
 * V8 flags read only when V8 starts, so on node's command line: the images' ENTRYPOINT (the flagship's
 * Dockerfile, a kind's generated one). `--no-memory-reducer`: the controller keeps its heap itself,
 * near what is live while busy and given back when it goes quiet (runtime/memory-return.ts), instead
 * of V8's timed reducer.
 */
export const startupV8Flags: ReadonlyArray<string> = ["--no-memory-reducer"];

export { v8FlagsVariable };
