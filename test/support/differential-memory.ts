/**
 * The differential test's memory world: the simulated controller (src/interpreters/memory/controller.ts,
 * the per-key core under a fake clock) over a memory API server that records every write, the
 * controller's and the user's, as the real world's audit log does.
 */
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { etcdHandlers } from "../../src/etcd/registry.ts";
import { supportedMembers } from "../../src/handlers/handler.ts";
import { type ApiResult, MemoryApiServer } from "../../src/interpreters/memory/api-server.ts";
import { FakeClock } from "../../src/interpreters/memory/clock.ts";
import { type Behaviour, SimulatedController } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { JsonPatchOperation } from "../../src/interpreters/status-json-patch.ts";
import type { Phase } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import type { Step } from "./controller.ts";
import {
  type Command,
  executeSteps,
  foreignFinalizer,
  handlerTexts,
  settleMs,
  timing,
} from "./differential-scenario.ts";
import type { ObservedEvent, ObservedWrite } from "./differential-writes.ts";
import { epoch, namespace, taskObject } from "./simulation.ts";

/** A memory API server that records each write with who made it (`actor`, set by the test). */
class RecordingServer extends MemoryApiServer {
  readonly writes: ObservedWrite[] = [];
  actor: ObservedWrite["actor"] = "ours";

  #record(
    verb: ObservedWrite["verb"],
    subresource: ObservedWrite["subresource"],
    name: string,
    result: ApiResult<JsonObject>,
  ): ApiResult<JsonObject> {
    this.writes.push({
      actor: this.actor,
      verb,
      subresource,
      name,
      ...(result.ok
        ? { code: verb === "create" ? 201 : 200, object: result.value }
        : { code: result.error.code }),
    });
    return result;
  }

  override create(object: JsonObject): ApiResult<JsonObject> {
    const name = String((object.metadata as JsonObject | undefined)?.name);
    return this.#record("create", "", name, super.create(object));
  }

  override patch(namespace: string, name: string, patch: JsonObject): ApiResult<JsonObject> {
    return this.#record("patch", "", name, super.patch(namespace, name, patch));
  }

  override patchStatus(namespace: string, name: string, patch: JsonObject): ApiResult<JsonObject> {
    return this.#record("patch", "status", name, super.patchStatus(namespace, name, patch));
  }

  override jsonPatchStatus(
    namespace: string,
    name: string,
    operations: ReadonlyArray<JsonPatchOperation>,
  ): ApiResult<JsonObject> {
    return this.#record("patch", "status", name, super.jsonPatchStatus(namespace, name, operations));
  }

  override delete(
    namespace: string,
    name: string,
    preconditions: { readonly uid?: string } = {},
  ): ApiResult<JsonObject> {
    return this.#record("delete", "", name, super.delete(namespace, name, preconditions));
  }

  /** Runs a user's action: its writes are recorded as the user's. */
  asUser(act: () => void): void {
    this.actor = "user";
    try {
      act();
    } finally {
      this.actor = "ours";
    }
  }
}

const asBehaviour = (step: Step): Behaviour =>
  "outcome" in step
    ? { kind: "return", outcome: step.outcome }
    : "hang" in step
      ? { kind: "hang" }
      : { kind: "throw", message: step.throws };

const finalizersOf = (object: JsonObject): string[] => {
  const list = (object.metadata as JsonObject | undefined)?.finalizers;
  return Array.isArray(list) ? list.filter((f): f is string => typeof f === "string") : [];
};

export interface MemoryWorld {
  readonly writes: ReadonlyArray<ObservedWrite>;
  readonly calls: ReadonlyArray<{ readonly uid: string; readonly phase: Phase }>;
  readonly events: ReadonlyArray<ObservedEvent>;
  readonly finals: ReadonlyArray<JsonObject>;
}

/** Runs `commands` in the memory world, each followed by `settleMs` of fake time. */
export const runInMemory = (commands: ReadonlyArray<Command>): MemoryWorld => {
  const clock = new FakeClock(epoch);
  const server = new RecordingServer({
    resource: "etcdopstasks.druid.gardener.cloud",
    now: () => clock.now(),
  });
  const scripts = new Map<string, Behaviour[]>();
  const controller = new SimulatedController({
    kind: etcdOpsTaskKind,
    config: lifecycleConfig(etcdOpsTaskKind, timing),
    supported: supportedMembers(etcdHandlers),
    server,
    clock,
    behaviour: (task, phase) =>
      (phase === "execute" ? scripts.get(task.metadata.name)?.shift() : undefined) ?? {
        kind: "return",
        outcome: { kind: "completed", description: handlerTexts[phase] },
      },
  });
  for (const command of commands) {
    if (command.kind === "restart") {
      controller.crash();
      controller.advanceAndRun(settleMs);
      continue;
    }
    const stored = server.get(namespace, command.name);
    server.asUser(() => {
      switch (command.kind) {
        case "create":
          if (stored.ok) return;
          scripts.set(command.name, executeSteps(command.plan).map(asBehaviour));
          server.create(taskObject(command.name, { etcd: command.etcd, ttl: command.ttl }));
          return;
        case "delete":
          server.delete(namespace, command.name);
          return;
        case "label":
          if (stored.ok) server.patch(namespace, command.name, { metadata: { labels: { touched: "yes" } } });
          return;
        case "foreign":
          if (
            stored.ok &&
            (stored.value.metadata as JsonObject).deletionTimestamp === undefined &&
            !finalizersOf(stored.value).includes(foreignFinalizer)
          )
            server.patch(namespace, command.name, {
              metadata: { finalizers: [...finalizersOf(stored.value), foreignFinalizer] },
            });
          return;
        case "unforeign":
          if (stored.ok && finalizersOf(stored.value).includes(foreignFinalizer))
            server.patch(namespace, command.name, {
              metadata: { finalizers: finalizersOf(stored.value).filter((f) => f !== foreignFinalizer) },
            });
          return;
      }
    });
    controller.advanceAndRun(settleMs);
  }
  return { writes: server.writes, calls: controller.calls, events: controller.events, finals: server.list() };
};
