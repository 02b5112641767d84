/**
 * docs/security-findings.md is the record of both security rounds: each round lists as many findings
 * as its introduction says, numbered from 1 without a gap, and every file it names as a test or a fix
 * exists, so the record cannot lose a finding or point at a file that moved.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const text = readFileSync(join(repoRoot, "docs", "security-findings.md"), "utf8");
const words: Record<string, number> = { ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14 };

/** The rounds: each `# ` section after the title, with the count its text announces. */
const rounds = () => {
  const [intro = "", ...rest] = text.split(/^# Second round.*$/m);
  const announced = [...intro.matchAll(/\bthe (\w+) findings\b/g)].map((match) => words[match[1] ?? ""]);
  const bodies = [intro, ...rest];
  return bodies.map((body, index) => ({
    announced: announced[index],
    numbers: [...body.matchAll(/^## (\d+)\b/gm)].map((match) => Number(match[1])),
  }));
};

describe("docs/security-findings.md", () => {
  it("lists, in each round, as many findings as it announces, numbered 1, 2, 3 …", () => {
    const found = rounds();
    expect(found).toHaveLength(2);
    for (const round of found) {
      expect(round.announced).toBeDefined();
      expect(round.numbers).toEqual(Array.from({ length: round.announced ?? 0 }, (_, index) => index + 1));
    }
  });

  it("names only files and folders that exist", () => {
    const named = [
      ...text.matchAll(/`((?:test|src|examples|deploy|deploy-namespaced|scripts|bench)\/[^`\s]+)`/g),
    ]
      .map((match) => (match[1] ?? "").replace(/[:#].*$/, ""))
      .filter((path) => !path.includes("…") && !path.includes("*"));
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((path) => !existsSync(join(repoRoot, path)))).toEqual([]);
  });
});
