/**
 * The inspection relay's viewers, bounded in number and in what the relay holds for each. A viewer may
 * hold its replay plus `maxBacklogBytes` of unsent live messages (its socket's `bufferedAmount`); a
 * message past that terminates it rather than dropping the message, because the inspector rebuilds each
 * task from the whole sequence and a gap would show states that never happened (a reload replays the
 * current state). `terminate()`, not `close()`: a close frame would queue behind the unread bytes.
 * Places are kept apart: anonymous viewers (any local process may connect) take at most `maxViewers`,
 * and beyond that a new one is closed at once with 1013 (try again later) and a reason; the developer's
 * own viewers (the relay's viewer token) have `maxOwnViewers` places no anonymous viewer can take, and
 * a new own viewer past them replaces the oldest own one, so that the developer is never locked out.
 */

/** What the relay uses of a viewer's socket (ws's `WebSocket`). */
export interface ViewerSocket {
  /** Bytes queued and not yet handed to the kernel. */
  readonly bufferedAmount: number;
  readonly readyState: number;
  send(data: Buffer, options: { readonly binary: false }): void;
  close(code: number, reason: string): void;
  /** Destroys the socket at once, dropping what is queued. */
  terminate(): void;
}

/** `WebSocket.OPEN`. */
const Open = 1;

export interface ViewerLimits {
  /** Live bytes a viewer may have unsent beyond its replay. */
  readonly maxBacklogBytes: number;
  /** Anonymous viewers at once. */
  readonly maxViewers: number;
  /** The developer's own viewers (viewer token) at once; the next replaces the oldest of them. */
  readonly maxOwnViewers: number;
}

export const DefaultViewerLimits: ViewerLimits = {
  // Eight messages of the relay's largest size (1 MiB); the controller publishes a pass (a few KB) at a time.
  maxBacklogBytes: 8 * 1024 * 1024,
  // A developer's few tabs and a CLI. The relay holds at most maxViewers × (history bound + backlog).
  maxViewers: 8,
  maxOwnViewers: 8,
};

/** WebSocket close code 1013: "try again later". */
export const ViewerLimitCloseCode = 1013;

interface Viewer {
  /** Unsent bytes this viewer may have: its replay plus the live backlog bound. */
  readonly allowance: number;
  /** Presented the relay's viewer token. */
  readonly own: boolean;
}

export class RelayViewers {
  private readonly viewers = new Map<ViewerSocket, Viewer>();
  private readonly limits: ViewerLimits;

  constructor(limits: ViewerLimits) {
    this.limits = limits;
  }

  /**
   * Admits a viewer and sends it its replay, or closes it with a reason when the anonymous places are
   * taken; an own viewer is always admitted. Returns whether it was admitted; the caller calls
   * `remove` when an admitted socket closes.
   */
  admit(socket: ViewerSocket, replay: ReadonlyArray<string>, own: boolean): boolean {
    const peers = [...this.viewers].filter(([, viewer]) => viewer.own === own);
    if (!own && peers.length >= this.limits.maxViewers) {
      socket.close(
        ViewerLimitCloseCode,
        `viewer limit reached (${this.limits.maxViewers}): close another viewer, or open the page the controller printed (its own places)`,
      );
      return false;
    }
    const [oldest] = peers;
    if (own && oldest !== undefined && peers.length >= this.limits.maxOwnViewers) {
      this.viewers.delete(oldest[0]);
      oldest[0].close(
        ViewerLimitCloseCode,
        `replaced by a newer viewer of this relay's page (at most ${this.limits.maxOwnViewers})`,
      );
    }
    let replayBytes = 0;
    for (const message of replay) {
      const bytes = Buffer.from(message);
      replayBytes += bytes.length;
      socket.send(bytes, { binary: false });
    }
    this.viewers.set(socket, { allowance: replayBytes + this.limits.maxBacklogBytes, own });
    return true;
  }

  remove(socket: ViewerSocket): void {
    this.viewers.delete(socket);
  }

  /** Sends a live message to every viewer, disconnecting those it would take past their allowance. */
  broadcast(message: string): void {
    // One buffer for all viewers: ws frames it without copying.
    const bytes = Buffer.from(message);
    for (const [socket, viewer] of this.viewers) {
      if (socket.readyState !== Open) continue;
      if (socket.bufferedAmount + bytes.length > viewer.allowance) {
        this.viewers.delete(socket);
        socket.terminate();
        continue;
      }
      socket.send(bytes, { binary: false });
    }
  }

  /** Unsent bytes the relay holds for each connected viewer. */
  backlogs(): number[] {
    return [...this.viewers.keys()].map((socket) => socket.bufferedAmount);
  }
}
