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
 *
 * An expedited task (a system's own, which the system waits for: etcd-druid's presync snapshots) is
 * admitted next: it waits only for an InProgress peer that is not just waiting (`activity`), and for
 * older expedited tasks; every task that is not expedited waits for it. The machine never Rejects it as
 * a duplicate, and Rejects it at once when the peer it meets is `exclusive`.
 */
import { isTerminal } from "../api/status.ts";
import type { PeerTask, TaskObservation } from "./types.ts";

const comesBefore = (
  a: { createdAt: number; name: string },
  b: { createdAt: number; name: string },
): boolean => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.name < b.name);

/** The order of Pending tasks: expedited ones first, then the oldest. */
const goesFirst = (
  a: { createdAt: number; name: string; expedited?: true },
  b: { createdAt: number; name: string; expedited?: true },
): boolean => (a.expedited === b.expedited ? comesBefore(a, b) : a.expedited === true);

/** The peer this task must wait for (queue) or yield to (reject), or undefined when it may proceed. */
export const blockingPeer = (task: TaskObservation, peers: ReadonlyArray<PeerTask>): PeerTask | undefined => {
  if (task.group === undefined) return undefined;
  const rivals = peers.filter(
    (peer) =>
      peer.uid !== task.uid &&
      !isTerminal(peer.state) &&
      (!peer.deleting || (peer.state === "InProgress" && peer.released !== true)),
  );
  const running = rivals.filter(
    (peer) => peer.state === "InProgress" && (task.expedited !== true || peer.activity !== "waiting"),
  );
  // The exclusive one decides: an expedited task meeting it is Rejected rather than left waiting.
  const first = running.find((peer) => peer.activity === "exclusive") ?? running[0];
  if (first !== undefined) return first;
  return rivals
    .filter((peer) => peer.state !== "InProgress" && goesFirst(peer, task))
    .sort((a, b) => (goesFirst(a, b) ? -1 : 1))[0];
};
