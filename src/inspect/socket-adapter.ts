/**
 * The transport from `createInspector` to a relay: a WebSocket client (Node's global `WebSocket`) that
 * queues while disconnected and reconnects on an unref'd timer, so inspection alone never keeps the
 * process alive; `stop()` cancels the timer, closes the socket and resolves once it is closed. Why not
 * `createWebSocketInspector`'s adapter: docs/design-notes.md §16.
 */
import type { StatelyInspectionEvent } from "@statelyai/inspect";

export interface SocketAdapterOptions {
  /** Delay before reconnecting after the socket closed or could not connect. */
  readonly retryMs?: number;
  /** Messages kept while disconnected; the oldest are dropped beyond this. */
  readonly maxQueued?: number;
  /** How long `stop()` waits for the close handshake before giving up on it. */
  readonly closeTimeoutMs?: number;
  readonly onError?: (error: unknown) => void;
}

/** The `Adapter` shape `createInspector` takes, plus an awaitable stop. */
export interface SocketAdapter {
  readonly start: () => void;
  readonly stop: () => void;
  readonly send: (event: StatelyInspectionEvent) => void;
  /** Stops, and resolves once the socket is closed (or after `closeTimeoutMs`). */
  readonly close: () => Promise<void>;
  readonly connected: () => boolean;
}

export const socketAdapter = (url: string, options: SocketAdapterOptions = {}): SocketAdapter => {
  const retryMs = options.retryMs ?? 5_000;
  const maxQueued = options.maxQueued ?? 1_000;
  const closeTimeoutMs = options.closeTimeoutMs ?? 2_000;
  const queue: string[] = [];
  let socket: WebSocket | undefined;
  let socketClosed: Promise<void> = Promise.resolve();
  let retry: NodeJS.Timeout | undefined;
  let started = false;
  let stopped = false;

  const connect = (): void => {
    retry = undefined;
    if (stopped) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(url);
    } catch (error) {
      options.onError?.(error);
      return;
    }
    socket = ws;
    socketClosed = new Promise((resolve) => {
      ws.addEventListener("close", () => resolve(), { once: true });
    });
    ws.addEventListener("open", () => {
      for (const message of queue.splice(0)) ws.send(message);
    });
    ws.addEventListener("close", () => {
      if (socket === ws) socket = undefined;
      if (stopped) return;
      retry = setTimeout(connect, retryMs);
      retry.unref();
    });
    // A failed connection is followed by `close`, which schedules the retry; the messages stay queued.
    ws.addEventListener("error", () => {});
  };

  const stop = (): void => {
    stopped = true;
    if (retry !== undefined) clearTimeout(retry);
    retry = undefined;
    if (socket !== undefined && socket.readyState !== WebSocket.CLOSED)
      socket.close(1000, "inspector stopped");
  };

  return {
    start: () => {
      if (started) return;
      started = true;
      connect();
    },
    stop,
    send: (event) => {
      if (stopped) return;
      let message: string;
      try {
        message = JSON.stringify(event);
      } catch (error) {
        options.onError?.(error);
        return;
      }
      if (socket?.readyState === WebSocket.OPEN) {
        socket.send(message);
        return;
      }
      queue.push(message);
      if (queue.length > maxQueued) queue.splice(0, queue.length - maxQueued);
    },
    close: async () => {
      stop();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, closeTimeoutMs);
        timer.unref();
      });
      await Promise.race([socketClosed, timeout]);
      clearTimeout(timer);
    },
    connected: () => socket?.readyState === WebSocket.OPEN,
  };
};
