/**
 * docs/security-findings.md is the record of the security rounds: the first two list as many findings
 * as the introduction says, numbered from 1 without a gap; the third names each finding of issue 35 by
 * its label, once; every file it names as a test or a fix exists, so the record cannot lose a finding
 * or point at a file that moved.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const text = readFileSync(join(repoRoot, "docs", "security-findings.md"), "utf8");
const words: Record<string, number> = { ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14 };

/** The rounds: each `# ` section after the title, with the count its text announces. */
const rounds = () => {
  const [intro = "", ...rest] = text
    .split(/^# Second round.*$/m)
    .flatMap((part, index) => (index === 0 ? [part] : [part.split(/^# Third round.*$/m)[0] ?? ""]));
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

  it("names every finding of the third round (issue 35) once, with its severity", () => {
    const third = text.split(/^# Third round.*$/m)[1] ?? "";
    const labels = [...third.matchAll(/^(?:### |- \*\*)([HML]\d+) \((?:HIGH|MEDIUM|LOW)\)/gm)].map(
      (match) => match[1],
    );
    const expected = ["H1", ...[1, 2, 3, 4, 5, 6, 8, 9].map((n) => `M${n}`)].concat(
      Array.from({ length: 10 }, (_, index) => `L${index + 1}`),
    );
    expect([...labels].sort()).toEqual([...expected].sort());
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
