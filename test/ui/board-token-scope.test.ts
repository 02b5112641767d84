/**
 * The task board's token stays with the board's own port, in a real browser (headless Chromium):
 * cookies ignore ports, so another web server on 127.0.0.1 that the browser visits after the board
 * must receive nothing of the token, while the board's page keeps reading its data, after a reload too.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BoardServer, startBoardServer } from "../../src/ui/board-server.ts";
import { BoardStore } from "../../src/ui/board-store.ts";
import { type Browser, launchChromium } from "../support/chromium.ts";

/** Another local web server: it records the headers of every request the browser makes to it. */
const startOtherServer = async (): Promise<{ server: Server; url: string; seen: IncomingHttpHeaders[] }> => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    if (request.url === "/page.js") {
      // The page asks its own server again, with every credential the browser would attach.
      response
        .writeHead(200, { "content-type": "text/javascript" })
        .end('fetch("/again", { credentials: "include" }).finally(() => { window.done = true; });');
      return;
    }
    response
      .writeHead(200, { "content-type": "text/html" })
      .end('<!DOCTYPE html><script src="/page.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/`, seen };
};

describe("the task board's token in a browser", () => {
  let board: BoardServer;
  let browser: Browser;

  beforeAll(async () => {
    board = await startBoardServer({
      host: "127.0.0.1",
      port: 0,
      store: new BoardStore(),
      explain: () => "",
      machineSvg: async () =>
        '<svg xmlns="http://www.w3.org/2000/svg"><g class="node"><title>idle</title></g></svg>',
      machine: () => ({ states: ["idle"], edges: [] }),
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await board?.stop();
  });

  it("never reaches another server on 127.0.0.1, and the board's page still reads its data", async () => {
    const page = await browser.newPage();
    expect(await page.goto(board.url)).toBe(200);
    await page.waitFor(
      "document.getElementById('live').textContent === 'live'",
      "the board's event stream open",
    );
    // Out of the address bar.
    expect(await page.evaluate<string>("location.href")).toBe(`${board.origin}/`);

    const other = await startOtherServer();
    try {
      expect(await page.goto(other.url)).toBe(200);
      await page.waitFor("window.done === true", "the other page's own request");
      expect(other.seen.length).toBeGreaterThanOrEqual(3);
      for (const headers of other.seen) expect(JSON.stringify(headers)).not.toContain(board.token);
    } finally {
      const closed = new Promise((resolve) => other.server.close(resolve));
      other.server.closeAllConnections();
      await closed;
    }

    // Back on the board without the token in the address: this tab still holds it.
    expect(await page.goto(`${board.origin}/`)).toBe(200);
    await page.waitFor("document.getElementById('live').textContent === 'live'", "the stream after a reload");
    const tasks = await page.evaluate<{ tasks: unknown[] }>(
      "fetch('/api/tasks', { headers: { authorization: 'Bearer ' + sessionStorage.getItem('opstask-board-token') } }).then((r) => r.json())",
    );
    expect(tasks.tasks).toEqual([]);
  }, 60_000);

  it("a tab without the token gets the page, which says a token is needed, and no data", async () => {
    const stranger = await browser.newPage({ isolated: true });
    expect(await stranger.goto(`${board.origin}/`)).toBe(200);
    expect(await stranger.evaluate<string>("document.getElementById('live').textContent")).toContain(
      "a token is needed",
    );
    expect(await stranger.goto(`${board.origin}/api/tasks`)).toBe(401);
    expect(await stranger.goto(`${board.origin}/?token=not-the-token`)).toBe(401);
  }, 60_000);
});
