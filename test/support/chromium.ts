/**
 * Headless Chromium (Debian's `chromium` package, installed by scripts/system-deps) driven over the
 * Chrome DevTools Protocol with `ws`. A dozen CDP commands are all the browser tests need (open a
 * page, evaluate, wait, screenshot, watch requests), so a small client here rather than a library that
 * brings its own browser download. Every browser started is stopped by `close()`; its profile is a
 * fresh temporary directory, and background networking is off so that the browser itself calls nobody.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";

/** Where Debian's chromium lives (override with CHROMIUM). */
export const chromiumPath = (): string | undefined =>
  [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
    (path) => path !== undefined && path !== "" && existsSync(path),
  );

interface Pending {
  readonly resolve: (value: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
  readonly method: string;
}

type Listener = (params: Record<string, unknown>, sessionId: string | undefined) => void;

class Connection {
  private next = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, Set<Listener>>();

  private readonly socket: WebSocket;

  constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as {
        id?: number;
        method?: string;
        params?: Record<string, unknown>;
        result?: Record<string, unknown>;
        error?: { message: string };
        sessionId?: string;
      };
      if (message.id !== undefined) {
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error !== undefined)
          waiting?.reject(new Error(`${waiting.method}: ${message.error.message}`));
        else waiting?.resolve(message.result ?? {});
      } else if (message.method !== undefined) {
        for (const listener of this.listeners.get(message.method) ?? [])
          listener(message.params ?? {}, message.sessionId);
      }
    });
    socket.on("close", () => {
      for (const waiting of this.pending.values())
        waiting.reject(new Error(`${waiting.method}: browser closed`));
      this.pending.clear();
    });
  }

  send(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
  ): Promise<Record<string, unknown>> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.socket.send(
        JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }),
      );
    });
  }

  on(method: string, listener: Listener): () => void {
    const set = this.listeners.get(method) ?? new Set<Listener>();
    set.add(listener);
    this.listeners.set(method, set);
    return () => set.delete(listener);
  }
}

export interface Page {
  /** Navigates and resolves once the load event fired; the HTTP status of the document. */
  goto(url: string): Promise<number | undefined>;
  /** Evaluates an expression (awaiting a promise) and returns its JSON value. */
  evaluate<T>(expression: string): Promise<T>;
  /** Polls `expression` until it is truthy; fails with `what` and the last value after `timeoutMs`. */
  waitFor<T>(expression: string, what: string, timeoutMs?: number): Promise<T>;
  screenshot(path: string): Promise<void>;
  /** Every URL the page requested so far. */
  readonly requests: ReadonlyArray<string>;
  /** The HTTP status of the latest response for `url`, if one arrived. */
  statusOf(url: string): number | undefined;
}

export interface Browser {
  /** A new tab; `isolated`: in a browser context of its own (no cookies of the other tabs). */
  newPage(options?: { readonly isolated?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

export const launchChromium = async (options: { width?: number; height?: number } = {}): Promise<Browser> => {
  const binary = chromiumPath();
  if (binary === undefined)
    throw new Error("chromium not found: run scripts/system-deps (Debian package chromium)");
  const profile = mkdtempSync(join(tmpdir(), "opstask-chromium-"));
  const child: ChildProcess = spawn(
    binary,
    [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
      "--no-first-run",
      "--no-default-browser-check",
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chromium did not start in 30 s:\n${stderr}`)), 30_000);
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`chromium exited (${code}):\n${stderr}`));
    });
  });
  const socket = new WebSocket(endpoint, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  const cdp = new Connection(socket);
  const width = options.width ?? 1600;
  const height = options.height ?? 1000;

  const newPage = async (pageOptions: { readonly isolated?: boolean } = {}): Promise<Page> => {
    const context =
      pageOptions.isolated === true
        ? ((await cdp.send("Target.createBrowserContext")) as { browserContextId: string })
        : {};
    const { targetId } = (await cdp.send("Target.createTarget", { url: "about:blank", ...context })) as {
      targetId: string;
    };
    const { sessionId } = (await cdp.send("Target.attachToTarget", { targetId, flatten: true })) as {
      sessionId: string;
    };
    const send = (method: string, params: Record<string, unknown> = {}) =>
      cdp.send(method, params, sessionId);
    await send("Page.enable");
    await send("Network.enable");
    await send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false });
    const requests: string[] = [];
    const statuses = new Map<string, number>();
    // DevTools sends a request's ExtraInfo events in no fixed order with its other events: the status of
    // a response the page may not read can come before the request it answers. Kept by request id until
    // that request's URL is known.
    const urlOf = new Map<string, string>();
    const unplaced = new Map<string, number>();
    cdp.on("Network.requestWillBeSent", (params, from) => {
      if (from !== sessionId) return;
      const request = params.request as { url: string };
      const id = params.requestId as string;
      requests.push(request.url);
      urlOf.set(id, request.url);
      const early = unplaced.get(id);
      if (early !== undefined) {
        unplaced.delete(id);
        statuses.set(request.url, early);
      }
    });
    // A response the page may not read (CORS) shows up only here, with its status.
    cdp.on("Network.responseReceivedExtraInfo", (params, from) => {
      if (from !== sessionId) return;
      const id = params.requestId as string;
      const url = urlOf.get(id);
      if (url === undefined) unplaced.set(id, params.statusCode as number);
      else statuses.set(url, params.statusCode as number);
    });
    cdp.on("Network.responseReceived", (params, from) => {
      if (from !== sessionId) return;
      const response = params.response as { url: string; status: number };
      statuses.set(response.url, response.status);
    });
    const evaluate = async <T>(expression: string): Promise<T> => {
      const result = (await send("Runtime.evaluate", {
        expression,
        awaitPromise: true,
        returnByValue: true,
      })) as {
        result: { value?: T };
        exceptionDetails?: { text: string; exception?: { description?: string } };
      };
      if (result.exceptionDetails !== undefined)
        throw new Error(
          `evaluate failed: ${result.exceptionDetails.exception?.description ?? result.exceptionDetails.text}`,
        );
      return result.result.value as T;
    };
    return {
      requests,
      statusOf: (url) => statuses.get(url),
      goto: async (url) => {
        const loaded = new Promise<void>((resolve) => {
          const off = cdp.on("Page.loadEventFired", (_, from) => {
            if (from !== sessionId) return;
            off();
            resolve();
          });
        });
        const navigated = (await send("Page.navigate", { url })) as { errorText?: string };
        if (navigated.errorText !== undefined)
          throw new Error(`navigating to ${url}: ${navigated.errorText}`);
        await loaded;
        const finalUrl = await evaluate<string>("location.href");
        return statuses.get(finalUrl) ?? statuses.get(url);
      },
      evaluate,
      waitFor: async <T>(expression: string, what: string, timeoutMs = 30_000): Promise<T> => {
        const deadline = Date.now() + timeoutMs;
        let last: unknown;
        for (;;) {
          last = await evaluate<unknown>(expression);
          if (last) return last as T;
          if (Date.now() > deadline)
            throw new Error(`waited ${timeoutMs} ms for ${what}; last value: ${JSON.stringify(last)}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      screenshot: async (path) => {
        const { data } = (await send("Page.captureScreenshot", { format: "png" })) as { data: string };
        writeFileSync(path, Buffer.from(data, "base64"));
      },
    };
  };

  let closing: Promise<void> | undefined;
  return {
    newPage,
    close: () => {
      closing ??= (async () => {
        const exited = new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) resolve();
          else child.once("exit", () => resolve());
        });
        await cdp.send("Browser.close").catch(() => undefined);
        socket.close();
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
        rmSync(profile, { recursive: true, force: true });
      })();
      return closing;
    },
  };
};
