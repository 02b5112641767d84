/**
 * The machine's edges, read from its definition: every transition as (from, event, to) between leaf
 * states, with eventless transitions named `always`. Used to prove that tests exercise every edge,
 * and to draw the machine.
 */
import type { AnyStateNode } from "xstate";
import { taskMachine } from "./task-machine.ts";

export interface Edge {
  readonly from: string;
  readonly event: string;
  readonly to: string;
  /** The guard's name, when the transition has one (inline guards are `inline`). */
  readonly guard?: string;
}

const pathOf = (node: AnyStateNode): string => node.path.join(".");

/** A compound target is entered through its initial states, down to a leaf. */
export const leafOf = (node: AnyStateNode): AnyStateNode => {
  let current = node;
  while (current.type === "compound") {
    const next = current.initial.target[0];
    if (next === undefined) break;
    current = next;
  }
  return current;
};

const guardName = (guard: unknown): string | undefined => {
  if (guard === undefined) return undefined;
  if (typeof guard === "string") return guard;
  if (typeof guard === "object" && guard !== null && "type" in guard && typeof guard.type === "string")
    return guard.type;
  return "inline";
};

export const edgeKey = (edge: Pick<Edge, "from" | "event" | "to">): string =>
  `${edge.from} --${edge.event}--> ${edge.to}`;

export const machineEdges = (): Edge[] => {
  const edges: Edge[] = [];
  const visit = (node: AnyStateNode): void => {
    const transitions = [...node.transitions.values()].flat().map((t) => ({ t, event: String(t.eventType) }));
    const always = (node.always ?? []).map((t) => ({ t, event: "always" }));
    for (const { t, event } of [...transitions, ...always]) {
      for (const target of t.target ?? []) {
        const guard = guardName(t.guard);
        edges.push({
          from: pathOf(node),
          event,
          to: pathOf(leafOf(target)),
          ...(guard === undefined ? {} : { guard }),
        });
      }
    }
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(taskMachine.root);
  return edges;
};
