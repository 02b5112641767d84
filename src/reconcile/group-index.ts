/**
 * Tasks by admission group (`namespace/group`), kept from the change stream, with what their peers'
 * admission reads of each (state, deleting): admission and peer wake-ups read one group, never the
 * whole namespace (that was quadratic in the number of tasks), and never decode a peer to learn
 * whether it is finished.
 *
 * Memory matters here (10,000 cached tasks): most groups have one task (one etcd, one task), so such a
 * group holds the key itself, not a Set; signatures are shared strings, one per combination.
 */
import { isTerminal } from "../api/status.ts";
import type { TaskFacts } from "./task-kind.ts";

interface Entry {
  readonly group: string;
  /** `state|deleting`, shared between tasks. */
  readonly signature: string;
  readonly finished: boolean;
}

const signatures = new Map<string, string>();
const signatureOf = (facts: TaskFacts): string => {
  const deleting = facts.metadata.deletionTimestamp !== undefined;
  const text = `${facts.status.state ?? "-"}|${deleting ? "deleting" : ""}`;
  const known = signatures.get(text);
  if (known !== undefined) return known;
  signatures.set(text, text);
  return text;
};

export class GroupIndex {
  readonly #entries = new Map<string, Entry>();
  readonly #members = new Map<string, string | Set<string>>();

  /**
   * Records `key` in `group` with its facts (undefined: the task is gone). Answers whether what its
   * peers' admission reads of it changed (it appeared, went, or changed state or deleting).
   */
  update(
    key: string,
    now: { readonly group: string | undefined; readonly facts: TaskFacts } | undefined,
  ): boolean {
    const previous = this.#entries.get(key);
    const group = now?.group;
    if (now === undefined || group === undefined) {
      if (previous === undefined) return now === undefined;
      this.#entries.delete(key);
      this.#leave(previous.group, key);
      return true;
    }
    const signature = signatureOf(now.facts);
    const entry: Entry = { group, signature, finished: isTerminal(now.facts.status.state) };
    if (previous !== undefined && previous.group === group && previous.signature === signature) return false;
    this.#entries.set(key, entry);
    if (previous?.group !== group) {
      if (previous !== undefined) this.#leave(previous.group, key);
      this.#join(group, key);
    }
    return true;
  }

  /** Whether `key` is recorded in some group. */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  members(group: string): ReadonlyArray<string> {
    const members = this.#members.get(group);
    return members === undefined ? [] : typeof members === "string" ? [members] : [...members];
  }

  /** Members not yet Succeeded, Failed or Rejected. */
  unfinishedMembers(group: string): ReadonlyArray<string> {
    return this.members(group).filter((key) => this.#entries.get(key)?.finished !== true);
  }

  #join(group: string, key: string): void {
    const members = this.#members.get(group);
    if (members === undefined) this.#members.set(group, key);
    else if (typeof members === "string") this.#members.set(group, new Set([members, key]));
    else members.add(key);
  }

  #leave(group: string, key: string): void {
    const members = this.#members.get(group);
    if (members === key) this.#members.delete(group);
    else if (typeof members !== "string" && members !== undefined) {
      members.delete(key);
      if (members.size === 1) this.#members.set(group, members.values().next().value ?? "");
    }
  }
}
