/**
 * The memory interpreter's writes: each write request performed against `MemoryApiServer`
 * (perform-write.ts) with the faults a test asked for (a failed status write or DELETE, a concurrent
 * edit before a metadata write, a user's action just before a result is written), recorded for the
 * checks.
 */
import { isTaskWrite } from "../../effects/task-effect.ts";
import type { PassRequest } from "../../reconcile/pass.ts";
import type { MemoryApiServer } from "./api-server.ts";
import type { FakeClock } from "./clock.ts";
import type { JsonObject } from "./merge-patch.ts";
import { performWrite, type WriteResult } from "./perform-write.ts";
import type { WriteRecord } from "./records.ts";

export type WriteRequest = Exclude<PassRequest, { readonly _tag: "RunPhase" | "RecordEvent" }>;

/** The task a write is about: as last read or written by its pass. */
export interface WriteTarget {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly object: JsonObject;
}

export class MemoryWrites {
  readonly records: WriteRecord[] = [];
  readonly #server: MemoryApiServer;
  readonly #clock: FakeClock;
  #failNextStatusWrite = false;
  #failNextDelete = false;
  #concurrentEditBeforeNextMetadataWrite = false;
  #beforeNextResultWrite: ((namespace: string, name: string) => void) | undefined;

  /** The tasks' resource, as an API error names it (`chores`). */
  readonly #plural: string;

  constructor(server: MemoryApiServer, clock: FakeClock, plural: string) {
    this.#server = server;
    this.#clock = clock;
    this.#plural = plural;
  }

  failNextStatusWrite(): void {
    this.#failNextStatusWrite = true;
  }

  failNextDelete(): void {
    this.#failNextDelete = true;
  }

  editConcurrentlyBeforeNextMetadataWrite(): void {
    this.#concurrentEditBeforeNextMetadataWrite = true;
  }

  beforeNextResultWrite(act: (namespace: string, name: string) => void): void {
    this.#beforeNextResultWrite = act;
  }

  /** Performs one write. `carriesResult`: the pass holds a handler result this write may put on the object. */
  write(target: WriteTarget, request: WriteRequest, carriesResult: boolean): WriteResult {
    const server = this.#server;
    const now = this.#clock.now();
    const { namespace, name } = target;
    if (request._tag === "PatchStatus" && carriesResult && this.#beforeNextResultWrite !== undefined) {
      const act = this.#beforeNextResultWrite;
      this.#beforeNextResultWrite = undefined;
      act(namespace, name);
    }
    const metadataWrite = request._tag === "AddFinalizer" || request._tag === "RemoveFinalizer";
    if (metadataWrite && this.#concurrentEditBeforeNextMetadataWrite) {
      this.#concurrentEditBeforeNextMetadataWrite = false;
      server.patch(namespace, name, { metadata: { labels: { "edited-by": `someone-${now}` } } });
    }
    if (request._tag === "DeleteTask" && this.#failNextDelete) {
      this.#failNextDelete = false;
      return {
        kind: "failed",
        reason: `the server is currently unable to handle the request (delete ${this.#plural})`,
      };
    }
    if (request._tag === "PatchStatus" && this.#failNextStatusWrite) {
      this.#failNextStatusWrite = false;
      return { kind: "failed", reason: "status write failed: 500 Internal Server Error" };
    }
    const result = performWrite(server, target.object, request);
    if (result.kind === "ok" && isTaskWrite(request)) {
      const resourceVersion = String((result.object?.metadata as JsonObject | undefined)?.resourceVersion);
      this.records.push({ uid: target.uid, name, effect: request._tag, at: now, resourceVersion });
    }
    return result;
  }
}
