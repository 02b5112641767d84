/**
 * The Node settings of the deployed controller, the same for the flagship (deploy/deployment.yaml)
 * and every kind's generated Deployment (a test compares the two): bounded V8 heaps, no optimizing
 * compiler, two malloc arenas, V8's size-over-speed heuristics, and the heap kept by the controller
 * itself, near what is live while busy and given back when it goes quiet (runtime/memory-return.ts:
 * `gc` exposed, V8's timed memory reducer off). Why each: deploy/deployment.yaml's comments, the Dockerfile's and
 * bench/PROFILE.md.
 */
import { v8FlagsVariable } from "../v8-flags.ts";

/** The container's environment (NODE_OPTIONS takes only Node's allowed V8 flags). */
export const tunedNodeEnv: Readonly<Record<string, string>> = {
  NODE_OPTIONS: "--jitless --max-old-space-size=128 --max-semi-space-size=1 --expose-gc",
  MALLOC_ARENA_MAX: "2",
};

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
