/**
 * The board's page as served: its script parses, and nothing in the page, its style or its script
 * names another origin (the browser test checks the requests the page actually makes).
 */
import { describe, expect, it } from "vitest";
import { boardCss, boardHtml } from "../../src/ui/page/board-html.ts";
import { boardScript } from "../../src/ui/page/board-script.ts";

describe("the board's page", () => {
  it("has a script that parses as JavaScript", () => {
    expect(() => new Function(boardScript)).not.toThrow();
  });

  it("loads only its own origin's assets (no CDN, no fonts, no inline script)", () => {
    // The SVG namespace is an identifier, not a request.
    const urls = [boardHtml, boardCss, boardScript]
      .join("\n")
      .replaceAll("http://www.w3.org/2000/svg", "")
      .match(/\b(?:https?:)?\/\/[^\s"'`)]+/g);
    expect(urls).toBeNull();
    expect(boardHtml).not.toMatch(/<script>(?!<\/script>)/);
    expect(boardHtml).not.toMatch(/\son\w+=/);
  });
});
