/**
 * Which peer, if any, keeps a task from being admitted (docs/contract.md §8 and §13 D4).
 *
 * Among the non-terminal tasks of one admission group, the oldest (creationTimestamp, then name)
 * goes first, and a task that is already InProgress goes before everyone. Every task applies the same
 * rule to the same ordering, so two tasks created together never both give way and never both proceed
 * (given that admissions of one group are serialised, which the runtime guarantees).
 *
 * A peer being deleted still counts while it is InProgress (its execution or cleanup may be running),
 * but not before it started (it will never run), nor once this controller released it (its cleanup is
 * done): a foreign finalizer could keep such an object for ever. (A handler call the deletion left
 * running still holds the group: the per-key core keeps it locked until the call ends.)
 */
import { isTerminal } from "../api/status.ts";
import type { PeerTask, TaskObservation } from "./types.ts";

const comesBefore = (
  a: { createdAt: number; name: string },
  b: { createdAt: number; name: string },
): boolean => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.name < b.name);

/** The peer this task must wait for (queue) or yield to (reject), or undefined when it may proceed. */
export const blockingPeer = (task: TaskObservation, peers: ReadonlyArray<PeerTask>): PeerTask | undefined => {
  if (task.group === undefined) return undefined;
  const rivals = peers.filter(
    (peer) =>
      peer.uid !== task.uid &&
      !isTerminal(peer.state) &&
      (!peer.deleting || (peer.state === "InProgress" && peer.released !== true)),
  );
  const running = rivals.find((peer) => peer.state === "InProgress");
  if (running !== undefined) return running;
  return rivals.filter((peer) => comesBefore(peer, task)).sort((a, b) => (comesBefore(a, b) ? -1 : 1))[0];
};
