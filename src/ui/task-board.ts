/**
 * The live task board (`opstask controller --ui ADDRESS`): a page served by the controller itself that
 * draws the lifecycle machine from its definition with the number of tasks in each state, lists the
 * tasks and the TaskSchedules (with their next run times), and shows one task's passes as they happen.
 * Nothing leaves the machine: the page, its script and the machine's drawing (Graphviz compiled to
 * WebAssembly) are all served from here.
 *
 * It is fed through what a controller already offers: `passTransitions` of `ControllerObserver`, and
 * decorated services (recording.ts) for what a pass did. The caller runs the controller with
 * `board.kind`, `board.handlers(…)` and `board.layer(…)` in place of its own, and gives
 * `board.schedules.observe` to the schedule controller as its `observe`.
 */

import type * as Layer from "effect/Layer";
import type { AnyStateNode } from "xstate";
import type { HandlerRegistry } from "../handlers/handler.ts";
import type { EventRecorder } from "../interpreters/kubernetes/event-recorder.ts";
import type { KubeRequests } from "../interpreters/kubernetes/layer.ts";
import type { TaskWriter } from "../interpreters/kubernetes/task-writer.ts";
import { machineEdges } from "../machine/edges.ts";
import { machineSvg } from "../machine/export.ts";
import { taskMachine } from "../machine/task-machine.ts";
import type { TaskKind } from "../reconcile/task-kind.ts";
import type { ControllerObserver } from "../runtime/metrics.ts";
import { BoardSchedules } from "./board-schedules.ts";
import { type BoardServer, startBoardServer } from "./board-server.ts";
import { type BoardLimits, BoardStore, type ExplainInput } from "./board-store.ts";
import { recordingHandlers, recordingKind, recordingLayer } from "./recording.ts";

export interface TaskBoardOptions<Task> {
  /** `HOST:PORT`; `PORT` or `:PORT` alone is on 127.0.0.1 (0 picks a free port). */
  readonly address: string;
  readonly kind: TaskKind<Task>;
  /** The "why" line of a task (`opstask describe`'s); default: its phase and last error. */
  readonly explain?: (input: ExplainInput, now: number) => string;
  readonly limits?: Partial<BoardLimits>;
  readonly token?: string;
}

export interface TaskBoard<Task> {
  readonly server: BoardServer;
  readonly store: BoardStore;
  /** The schedules the board lists, fed by the schedule controller's `observe`. */
  readonly schedules: BoardSchedules;
  readonly observer: Required<Pick<ControllerObserver, "passTransitions">>;
  /** The task kind to run the controller with (reports each task it decodes). */
  readonly kind: TaskKind<Task>;
  readonly handlers: <R>(handlers: HandlerRegistry<Task, R>) => HandlerRegistry<Task, R>;
  readonly layer: (
    kubernetes: Layer.Layer<TaskWriter | EventRecorder | KubeRequests>,
  ) => Layer.Layer<TaskWriter | EventRecorder | KubeRequests>;
  readonly stop: () => Promise<void>;
}

/** `127.0.0.1:8090`, `[::1]:8090`, `:8090`, `8090` → host and port (loopback unless a host is named). */
export const parseBoardAddress = (address: string): { host: string; port: number } | undefined => {
  const match = /^(?:(\[[\da-fA-F:]+\]|[\w.-]+)?:)?(\d{1,5})$/.exec(address.trim());
  if (match === null) return undefined;
  const port = Number(match[2]);
  if (port > 65535) return undefined;
  const host = (match[1] ?? "").replace(/^\[|\]$/g, "");
  return { host: host === "" ? "127.0.0.1" : host, port };
};

const statePaths = (): string[] => {
  const paths: string[] = [];
  const visit = (node: AnyStateNode): void => {
    for (const child of Object.values(node.states)) {
      paths.push(child.path.join("."));
      visit(child);
    }
  };
  visit(taskMachine.root);
  return paths;
};

const defaultExplain = (input: ExplainInput): string => {
  const last = input.status.lastErrors?.at(-1);
  const operation = input.status.lastOperation;
  return `${input.status.state ?? "not admitted yet"}${operation === undefined ? "" : `: ${operation.description}`}${
    last === undefined ? "" : ` (last error ${last.code})`
  }`;
};

export const startTaskBoard = async <Task>(options: TaskBoardOptions<Task>): Promise<TaskBoard<Task>> => {
  const target = parseBoardAddress(options.address);
  if (target === undefined)
    throw new Error(`invalid task board address "${options.address}": expected HOST:PORT, :PORT or PORT`);
  const store = new BoardStore(options.limits);
  const schedules = new BoardSchedules(undefined, options.limits?.maxText);
  const server = await startBoardServer({
    ...target,
    store,
    schedules,
    explain: options.explain ?? defaultExplain,
    groupWord: options.kind.vocabulary.group,
    machineSvg,
    machine: () => ({ states: statePaths(), edges: machineEdges() }),
    ...(options.token === undefined ? {} : { token: options.token }),
  });
  return {
    server,
    store,
    schedules,
    observer: { passTransitions: (task, pass) => store.passEnded(task, pass, Date.now()) },
    kind: recordingKind(options.kind, store),
    handlers: (handlers) => recordingHandlers(handlers, options.kind, store),
    layer: (kubernetes) => recordingLayer(kubernetes, options.kind, store),
    stop: server.stop,
  };
};
