/**
 * What the inspection relay replays to a viewer that joins late: the last `windowSize` messages,
 * preceded by every known actor's `@xstate.actor` message (and its latest snapshot when that left the
 * window), so a late viewer still gets every task's definition. Bounded by `windowSize`, `maxActors` and
 * `maxBytes` of string length over everything kept (a count alone does not bound memory); beyond them the
 * least recently active entries go first. A message larger than the whole budget is relayed, never kept.
 */

interface Recorded {
  readonly seq: number;
  readonly message: string;
}

interface ActorRecord {
  readonly actor: string;
  readonly latestSnapshot: Recorded | undefined;
  /** When it was last announced or snapshotted: the actors map is in this order. */
  readonly activeSeq: number;
}

export interface RelayHistoryLimits {
  readonly windowSize?: number;
  readonly maxActors?: number;
  /** Total size of the kept messages, as string length. */
  readonly maxBytes?: number;
}

export const DefaultHistoryLimits = {
  windowSize: 200,
  maxActors: 500,
  // 500 actors announced with the task machine (~7 KB each) and a full window of ~1 KB messages need
  // ~4 MB; 16 MiB leaves room for large task statuses.
  maxBytes: 16 * 1024 * 1024,
} as const;

const sizeOfActor = (record: ActorRecord): number =>
  record.actor.length + (record.latestSnapshot?.message.length ?? 0);

export class RelayHistory {
  private seq = 0;
  private readonly window: Recorded[] = [];
  private readonly actors = new Map<string, ActorRecord>();
  private readonly windowSize: number;
  private readonly maxActors: number;
  private readonly maxBytes: number;
  private kept = 0;

  constructor(limits: RelayHistoryLimits = {}) {
    this.windowSize = limits.windowSize ?? DefaultHistoryLimits.windowSize;
    this.maxActors = limits.maxActors ?? DefaultHistoryLimits.maxActors;
    this.maxBytes = limits.maxBytes ?? DefaultHistoryLimits.maxBytes;
  }

  /** The size of what is kept (string length). */
  size(): number {
    return this.kept;
  }

  record(message: string): void {
    const seq = ++this.seq;
    if (message.length > this.maxBytes) return;
    const { type, sessionId } = classify(message);
    if (type === "@xstate.actor" && sessionId !== undefined) {
      this.forgetActor(sessionId);
      this.rememberActor(sessionId, { actor: message, latestSnapshot: undefined, activeSeq: seq });
      const oldest = this.actors.keys().next();
      if (this.actors.size > this.maxActors && !oldest.done) this.forgetActor(oldest.value);
      this.shrink();
      return;
    }
    if (type === "@xstate.snapshot" && sessionId !== undefined) {
      const actor = this.actors.get(sessionId);
      if (actor !== undefined) {
        // Most recently active last, so that the least recently active actor is evicted first.
        this.forgetActor(sessionId);
        this.rememberActor(sessionId, {
          actor: actor.actor,
          latestSnapshot: { seq, message },
          activeSeq: seq,
        });
      }
    }
    this.window.push({ seq, message });
    this.kept += message.length;
    if (this.window.length > this.windowSize) this.dropOldestWindowMessage();
    this.shrink();
  }

  /** Messages for a client that joins now, in the order to send them. */
  replay(): string[] {
    const windowStart = this.window[0]?.seq ?? this.seq + 1;
    const out: string[] = [];
    for (const { actor, latestSnapshot } of this.actors.values()) {
      out.push(actor);
      if (latestSnapshot !== undefined && latestSnapshot.seq < windowStart) out.push(latestSnapshot.message);
    }
    for (const { message } of this.window) out.push(message);
    return out;
  }

  private rememberActor(sessionId: string, record: ActorRecord): void {
    this.actors.set(sessionId, record);
    this.kept += sizeOfActor(record);
  }

  private forgetActor(sessionId: string): void {
    const record = this.actors.get(sessionId);
    if (record === undefined) return;
    this.actors.delete(sessionId);
    this.kept -= sizeOfActor(record);
  }

  private dropOldestWindowMessage(): void {
    const dropped = this.window.shift();
    if (dropped !== undefined) this.kept -= dropped.message.length;
  }

  /** Drops the least recently active of window messages and actors until the kept size fits. */
  private shrink(): void {
    while (this.kept > this.maxBytes) {
      const oldestMessage = this.window[0];
      const oldestActor = this.actors.entries().next();
      if (oldestMessage === undefined && oldestActor.done) return;
      if (
        oldestActor.done ||
        (oldestMessage !== undefined && oldestMessage.seq < oldestActor.value[1].activeSeq)
      )
        this.dropOldestWindowMessage();
      else this.forgetActor(oldestActor.value[0]);
    }
  }
}

const classify = (message: string): { type?: string; sessionId?: string } => {
  try {
    const parsed: unknown = JSON.parse(message);
    if (typeof parsed !== "object" || parsed === null) return {};
    const type = "type" in parsed && typeof parsed.type === "string" ? parsed.type : undefined;
    const sessionId =
      "sessionId" in parsed && typeof parsed.sessionId === "string" ? parsed.sessionId : undefined;
    return { ...(type === undefined ? {} : { type }), ...(sessionId === undefined ? {} : { sessionId }) };
  } catch {
    return {};
  }
};
