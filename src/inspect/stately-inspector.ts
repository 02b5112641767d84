/**
 * Streams the task lifecycle to the Stately inspector: one inspected actor per task (id = task key,
 * sessionId stable per UID), announced with the machine definition on its first pass; each pass
 * (`ControllerObserver.passTransitions`) sends the `idle` snapshot it started from, its events and the
 * snapshot it ended in. Messages use @statelyai/inspect's format over our own socket adapter and relay
 * (socket-adapter.ts, relay.ts), both loaded only when `startStatelyInspector` runs, so `stop()` lets the
 * process exit. View: the relay's page (`http://127.0.0.1:8080/` by default), which embeds
 * https://stately.ai/inspect.
 */
import type { StatelyInspectionEvent } from "@statelyai/inspect";
import { taskMachine } from "../machine/task-machine.ts";
import { importOptional } from "../optional-package.ts";
import type { Pass } from "../reconcile/pass.ts";
import type { ControllerObserver } from "../runtime/metrics.ts";
import { finalSnapshot, type InspectedSnapshot, passEvents, startSnapshot } from "./pass-messages.ts";
import type { Relay } from "./relay.ts";
import { socketAdapter } from "./socket-adapter.ts";

export interface StatelyInspectorOptions {
  /** Port of the in-process relay (default 8080; 0 picks a free one). Bound to 127.0.0.1. */
  readonly port?: number;
  /** Start the relay in-process (default: true unless `url` is given). */
  readonly relay?: boolean;
  /** An existing relay's publish URL (`ws://…`, with its token) to send to instead of starting one. */
  readonly url?: string;
  /** Delay between reconnect attempts to the relay (default 5 s). */
  readonly retryMs?: number;
  /** Inspection never fails the controller: errors go here (default: one process warning). */
  readonly onError?: (error: unknown) => void;
}

export interface StatelyInspector {
  readonly observer: Pick<ControllerObserver, "passTransitions">;
  /** Closes the socket and the relay; afterwards nothing of the inspector keeps the process alive. */
  readonly stop: () => Promise<void>;
  /** The relay's WebSocket URL for viewers (they only receive). */
  readonly url: string;
  /** The page to open in a browser, when the relay runs in-process. */
  readonly page: string | undefined;
}

/** Tasks remembered (to know which are announced); the oldest are forgotten beyond this. */
const maxTasks = 10_000;

interface InspectedTask {
  readonly ref: {
    readonly id: string;
    readonly sessionId: string;
    /** The machine: `createInspector` reads the definition it sends from `logic.config`. */
    readonly logic: typeof taskMachine;
    readonly send: () => void;
    readonly getSnapshot: () => InspectedSnapshot | undefined;
  };
  latest: InspectedSnapshot | undefined;
}

/** Stable per task object: a task recreated under the same name is a new actor. */
export const sessionIdOf = (task: { readonly key: string; readonly uid: string }): string =>
  `${task.key}@${task.uid}`;

/** The task key back from a session ID (keys and UIDs contain no `@`). */
const keyOf = (sessionId: string): string => sessionId.slice(0, sessionId.lastIndexOf("@"));

const relayUrl = (url: string): string => {
  const parsed = new URL(url);
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:")
    throw new Error(`inspector relay URL must be ws:// or wss://, got ${url}`);
  return url;
};

export const startStatelyInspector = async (
  options: StatelyInspectorOptions = {},
): Promise<StatelyInspector> => {
  const startRelay = options.relay ?? options.url === undefined;
  if (startRelay && options.url !== undefined)
    throw new Error("startStatelyInspector: give either relay (in-process) or url (an existing relay)");
  if (!startRelay && options.url === undefined)
    throw new Error("startStatelyInspector: without the in-process relay, url is required");

  let warned = false;
  const onError =
    options.onError ??
    ((error: unknown) => {
      if (warned) return;
      warned = true;
      process.emitWarning(`Stately inspector: ${error instanceof Error ? error.message : String(error)}`);
    });

  const { createInspector } = await importOptional(
    "@statelyai/inspect",
    "The Stately inspector",
    () => import("@statelyai/inspect"),
  );
  let relay: Relay | undefined;
  if (startRelay) {
    const { startRelay: listen } = await import("./relay.ts");
    relay = await listen({ port: options.port ?? 8080, host: "127.0.0.1" });
  }
  // The in-process relay lets only its publish URL (which carries its token) send; `url` is for viewers.
  const url = relay?.url ?? relayUrl(options.url ?? "");
  const publishUrl = relay?.publishUrl ?? url;

  const tasks = new Map<string, InspectedTask>();
  const adapter = socketAdapter(publishUrl, {
    onError,
    ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
  });
  const inspector = createInspector(adapter, {
    // The definition is 10 levels deep already (a guard's params inside a substate's `always`); the
    // default limit of 10 would cut anything deeper to "[Object]".
    serializationDepthLimit: 32,
    // The manual API sends no usable rootId (0.7.2 drops `info.rootId`) and names actors after the
    // machine ("task"): every task is its own root, named by its key.
    serialize: (event: StatelyInspectionEvent): StatelyInspectionEvent =>
      event.type === "@xstate.actor"
        ? { ...event, name: keyOf(event.sessionId), rootId: event.sessionId }
        : { ...event, rootId: event.sessionId },
  });
  inspector.start();

  let stopped = false;
  const passTransitions = (task: { readonly key: string; readonly uid: string }, pass: Pass): void => {
    if (stopped) return;
    try {
      let inspected = tasks.get(task.uid);
      if (inspected === undefined) {
        const state: InspectedTask = {
          ref: {
            id: task.key,
            sessionId: sessionIdOf(task),
            logic: taskMachine,
            send: () => {},
            getSnapshot: () => state.latest,
          },
          latest: undefined,
        };
        inspected = state;
        tasks.set(task.uid, state);
        const oldest = tasks.keys().next();
        if (tasks.size > maxTasks && !oldest.done) tasks.delete(oldest.value);
        inspector.actor(state.ref, startSnapshot(pass));
      } else {
        inspector.snapshot(inspected.ref, startSnapshot(pass));
      }
      const events = passEvents(pass);
      for (const event of events) inspector.event(inspected.ref, { ...event });
      const last = events.at(-1);
      inspected.latest = finalSnapshot(pass);
      inspector.snapshot(inspected.ref, inspected.latest, last === undefined ? {} : { event: { ...last } });
      // Released: the object is gone (or no longer ours); a later pass would announce it again.
      if (pass.snapshot.value === "released") tasks.delete(task.uid);
    } catch (error) {
      onError(error);
    }
  };

  let stopping: Promise<void> | undefined;
  return {
    observer: { passTransitions },
    url,
    page: relay?.page,
    stop: () => {
      stopping ??= (async () => {
        stopped = true;
        inspector.stop();
        await adapter.close();
        await relay?.stop();
      })();
      return stopping;
    },
  };
};
