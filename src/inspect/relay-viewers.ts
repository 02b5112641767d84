/**
 * The inspection relay's viewers, bounded in number and in what the relay holds for each. A viewer may
 * hold its replay plus `maxBacklogBytes` of unsent live messages (its socket's `bufferedAmount`); a
 * message past that terminates it rather than dropping the message, because the inspector rebuilds each
 * task from the whole sequence and a gap would show states that never happened (a reload replays the
 * current state). `terminate()`, not `close()`: a close frame would queue behind the unread bytes.
 * Beyond `maxViewers`, a new viewer is closed at once with 1013 (try again later) and a reason.
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
  readonly maxViewers: number;
}

export const DefaultViewerLimits: ViewerLimits = {
  // Eight messages of the relay's largest size (1 MiB); the controller publishes a pass (a few KB) at a time.
  maxBacklogBytes: 8 * 1024 * 1024,
  // A developer's few tabs and a CLI. The relay holds at most maxViewers × (history bound + backlog).
  maxViewers: 8,
};

/** WebSocket close code 1013: "try again later". */
export const ViewerLimitCloseCode = 1013;

interface Viewer {
  /** Unsent bytes this viewer may have: its replay plus the live backlog bound. */
  readonly allowance: number;
}

export class RelayViewers {
  private readonly viewers = new Map<ViewerSocket, Viewer>();
  private readonly limits: ViewerLimits;

  constructor(limits: ViewerLimits) {
    this.limits = limits;
  }

  /**
   * Admits a viewer and sends it its replay, or closes it with a reason when the relay is full.
   * Returns whether it was admitted; the caller calls `remove` when an admitted socket closes.
   */
  admit(socket: ViewerSocket, replay: ReadonlyArray<string>): boolean {
    if (this.viewers.size >= this.limits.maxViewers) {
      socket.close(
        ViewerLimitCloseCode,
        `viewer limit reached (${this.limits.maxViewers}): close another viewer, then reload`,
      );
      return false;
    }
    let replayBytes = 0;
    for (const message of replay) {
      const bytes = Buffer.from(message);
      replayBytes += bytes.length;
      socket.send(bytes, { binary: false });
    }
    this.viewers.set(socket, { allowance: replayBytes + this.limits.maxBacklogBytes });
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
