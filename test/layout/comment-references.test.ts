/**
 * Comments are contracts: every repository path a comment in src/ names exists, every docs section it
 * cites (`docs/contract.md §4`, a bare `§4` meaning the contract, `docs/x.md#anchor`) is a heading of
 * that document, and no comment leans on a tracker nobody can open ("issue 17", "finding 12") or
 * excuses its file's length. Measurements and history belong in docs/design-notes.md and
 * bench/PROFILE.md, where they can age without misleading.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

interface Comment {
  readonly file: string;
  readonly line: number;
  /** The comment's text without its delimiters and leading `*`s, lines joined by "\n". */
  readonly text: string;
}

interface Finding {
  readonly at: string;
  readonly problem: string;
}

const wordsBeforeRegex = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
]);

/**
 * The comments of a TypeScript source. Strings, template literals (with their `${…}` nested to any
 * depth) and regular expression literals are skipped, so a `//` or a path inside code is not a comment.
 */
const commentsOf = (file: string, source: string): Comment[] => {
  const comments: Comment[] = [];
  const lineAt = (index: number) => source.slice(0, index).split("\n").length;
  /** Brace depths at which an open template literal's `${` resumes the template on its `}`. */
  const templates: number[] = [];
  let depth = 0;
  /** Whether the last token ends a value, so that a `/` after it divides instead of opening a regex. */
  let afterValue = false;
  let i = 0;

  /** Scans template text from i to its closing backtick or to a `${`; returns the index after it. */
  const scanTemplate = (start: number): number => {
    let j = start;
    while (j < source.length) {
      const char = source[j];
      if (char === "\\") j += 2;
      else if (char === "`") return j + 1;
      else if (char === "$" && source[j + 1] === "{") {
        templates.push(depth);
        depth += 1;
        afterValue = false;
        return j + 2;
      } else j += 1;
    }
    return j;
  };

  while (i < source.length) {
    const char = source[i] ?? "";
    const next = source[i + 1];
    if (char === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end === -1 ? source.length : end;
      comments.push({ file, line: lineAt(i), text: source.slice(i + 2, stop).trim() });
      i = stop;
    } else if (char === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end === -1 ? source.length : end;
      const text = source
        .slice(i + 2, stop)
        .split("\n")
        .map((line) => line.replace(/^\s*\*?\s?/, "").trimEnd())
        .join("\n");
      comments.push({ file, line: lineAt(i), text });
      i = stop + 2;
    } else if (char === '"' || char === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== char && source[j] !== "\n") j += source[j] === "\\" ? 2 : 1;
      i = j + 1;
      afterValue = true;
    } else if (char === "`") {
      i = scanTemplate(i + 1);
      afterValue = true;
    } else if (char === "}" && templates.at(-1) === depth - 1) {
      templates.pop();
      depth -= 1;
      i = scanTemplate(i + 1);
      afterValue = true;
    } else if (char === "/" && !afterValue) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== "\n" && (inClass || source[j] !== "/")) {
        if (source[j] === "\\") j += 1;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        j += 1;
      }
      i = source[j] === "/" ? j + 1 : i + 1;
      afterValue = true;
    } else if (/[\w$#]/.test(char)) {
      const word = /^[\w$#]+/.exec(source.slice(i, i + 200))?.[0] ?? char;
      afterValue = !wordsBeforeRegex.has(word);
      i += word.length;
    } else {
      if (char === "{") depth += 1;
      else if (char === "}") depth -= 1;
      if (!/\s/.test(char)) afterValue = char === ")" || char === "]" || char === "}";
      i += 1;
    }
  }
  return comments;
};

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? [path, ...filesUnder(path)] : [path];
  });

/** Whether a repository path exists; a glob (`src/**\/*.ts`) must match at least one file. */
const pathExists = (root: string, path: string): boolean => {
  if (!path.includes("*")) return existsSync(join(root, path));
  const fixed = path.slice(0, path.indexOf("*")).replace(/[^/]*$/, "");
  if (!existsSync(join(root, fixed)) || !statSync(join(root, fixed)).isDirectory()) return false;
  const glob: Record<string, string> = { "**/": "(?:.*/)?", "**": ".*", "*": "[^/]*" };
  const pattern = new RegExp(
    `^${path.replace(/\*\*\/|\*\*|\*|[.+?^$()|[\]\\{}]/g, (token) => glob[token] ?? `\\${token}`)}$`,
  );
  return filesUnder(join(root, fixed)).some((file) => pattern.test(relative(root, file)));
};

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");

/** A markdown document's section numbers (`## 4. One pass` → 4, `### 1.1 …` → 1.1) and anchors. */
const sectionsOf = (root: string, doc: string) => {
  const path = join(root, doc);
  const headings =
    existsSync(path) && statSync(path).isFile()
      ? [...readFileSync(path, "utf8").matchAll(/^#{1,6} +(.+?)\s*$/gm)].map((match) => match[1] ?? "")
      : [];
  return {
    numbers: new Set(headings.flatMap((heading) => /^(\d+(?:\.\d+)*)\.?\s/.exec(heading)?.[1] ?? [])),
    anchors: new Set(headings.map(slug)),
  };
};

const roots = ["src", "test", "docs", "deploy", "scripts", "bench"];
/** A repository path, not part of a longer path or URL (`etcd-druid/docs/…`, `./src/…`), then a section. */
const reference = new RegExp(
  `(?<![\\w./@-])((?:${roots.join("|")})/[\\w.*/-]*[\\w*])(?:\\s*§\\s*(\\d+(?:\\.\\d+)*)|#([\\w-]+))?`,
  "g",
);
/**
 * A module named without its repository path (`board-guard.ts`, `task/explain.ts`), read from the
 * commenting file's folder or from src/. A quoted name ("main.ts") is a value, not a reference.
 */
const bareModule = /(?<![\w./@"'-])((?:[\w-]+\/)*[\w-]+\.ts)(?!\.?\w|["'])/g;
/** `§N` anywhere: one after a docs path is checked with that path; one after "RFC 1234" is the RFC's. */
const sectionSign = /(RFC\s+\d+\s*)?§\s*(\d+(?:\.\d+)*)/g;
const tracker = /\b(?:issue|finding)s?\s+#?\d+/gi;
/** A document cited by a bare name and a number (`design-traps 2`, `design-notes §5`): no path to follow. */
const bareDocument = /(?<![\w./@-])((?:design|contract|security)[\w-]*)(?:\.md)?\s+§?\d+/gi;
/** A member named after its file: `src/x.ts \`#name\``, `src/x.ts \`name\``, which that file must hold. */
const memberOf = new RegExp(
  `(?<![\\w./@-])((?:${roots.join("|")})/[\\w./-]*\\.ts)\\)?\\s+\`(#?[\\w$]+)\``,
  "g",
);
const lengthExcuse =
  /\b(?:over|more than|above|past|exceeds?|beyond)\s+\d+\s+lines\b|\blines,?\s+knowingly\b|\bknowingly\s+long\b/gi;

/** What is wrong with the references of these comments, read against the repository at root. */
const findingsOf = (root: string, comments: readonly Comment[]): Finding[] => {
  const sections = new Map<string, ReturnType<typeof sectionsOf>>();
  const sectionsIn = (doc: string) => {
    const known = sections.get(doc) ?? sectionsOf(root, doc);
    sections.set(doc, known);
    return known;
  };
  return comments.flatMap((comment) => {
    const at = (index: number) =>
      `${comment.file}:${comment.line + comment.text.slice(0, index).split("\n").length - 1}`;
    const findings: Finding[] = [];
    /** Indices of the `§` signs already checked with the path before them. */
    const checked = new Set<number>();
    for (const match of comment.text.matchAll(reference)) {
      const [, path = "", number, anchor] = match;
      if (!pathExists(root, path)) {
        findings.push({ at: at(match.index), problem: `names ${path}, which does not exist` });
        continue;
      }
      if (number !== undefined) {
        checked.add(match.index + match[0].lastIndexOf("§"));
        if (!sectionsIn(path).numbers.has(number))
          findings.push({
            at: at(match.index),
            problem: `cites ${path} §${number}, which has no such section`,
          });
      }
      if (anchor !== undefined && !sectionsIn(path).anchors.has(anchor))
        findings.push({ at: at(match.index), problem: `cites ${path}#${anchor}, which has no such heading` });
    }
    for (const match of comment.text.matchAll(bareModule)) {
      const [, path = ""] = match;
      if (roots.some((folder) => path.startsWith(`${folder}/`))) continue;
      if (
        ![join(dirname(comment.file), path), join("src", path)].some((candidate) =>
          existsSync(join(root, candidate)),
        )
      )
        findings.push({
          at: at(match.index),
          problem: `names ${path}, which does not exist beside ${comment.file} or under src/ (write its path)`,
        });
    }
    for (const match of comment.text.matchAll(sectionSign)) {
      const [, rfc, number = ""] = match;
      const sign = match.index + match[0].indexOf("§");
      if (rfc !== undefined || checked.has(sign)) continue;
      const before = [...comment.text.slice(0, sign).matchAll(/(?<![\w./@-])docs\/[\w./-]*\.md\b/g)].at(
        -1,
      )?.[0];
      const doc = before ?? "docs/contract.md";
      if (!sectionsIn(doc).numbers.has(number))
        findings.push({
          at: at(match.index),
          problem: `cites §${number} of ${doc}, which has no such section`,
        });
    }
    for (const match of comment.text.matchAll(bareDocument))
      findings.push({
        at: at(match.index),
        problem: `cites "${match[0]}", a document by a bare name: write its path (docs/x.md §N)`,
      });
    for (const match of comment.text.matchAll(memberOf)) {
      const [, path = "", member = ""] = match;
      const file = join(root, path);
      const word = new RegExp(`(?<![\\w$#])${member.replace(/\$/g, "\\$")}(?![\\w$])`);
      if (existsSync(file) && !word.test(readFileSync(file, "utf8")))
        findings.push({
          at: at(match.index),
          problem: `names ${path} \`${member}\`, which that file does not hold`,
        });
    }
    for (const match of comment.text.matchAll(tracker))
      findings.push({
        at: at(match.index),
        problem: `cites "${match[0]}", a tracker entry a reader cannot open: say what it means`,
      });
    for (const match of comment.text.matchAll(lengthExcuse))
      findings.push({
        at: at(match.index),
        problem: `excuses the file's length ("${match[0]}"): split the file or drop the excuse`,
      });
    return findings;
  });
};

const comments = sourceFiles(join(repoRoot, "src")).flatMap((file) =>
  commentsOf(relative(repoRoot, file), readFileSync(file, "utf8")),
);
const findings = findingsOf(repoRoot, comments);
const problems = (pattern: RegExp) =>
  findings
    .filter((finding) => pattern.test(finding.problem))
    .map((finding) => `${finding.at} ${finding.problem}`);

describe("reading comments", () => {
  it("skips strings, template literals and regular expressions, and keeps every comment", () => {
    const source = [
      'const a = "// src/no-such-string.ts"; // src/one.ts',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text under test
      "const b = `${`/* src/no-such-template.ts */${c}`}` /* src/two.ts */;",
      "const d = /\\/\\/ src\\/no-such-regex/.test(e) / 2; /** src/three.ts",
      " * src/four.ts */",
      "const f = x / y; // src/five.ts",
    ].join("\n");
    expect(commentsOf("f.ts", source)).toEqual([
      { file: "f.ts", line: 1, text: "src/one.ts" },
      { file: "f.ts", line: 2, text: "src/two.ts" },
      { file: "f.ts", line: 3, text: "src/three.ts\nsrc/four.ts" },
      { file: "f.ts", line: 5, text: "src/five.ts" },
    ]);
  });

  it("reads every source file's comments (the checks below are not vacuous)", () => {
    expect(comments.length).toBeGreaterThan(1000);
    expect(
      comments.filter((comment) => new RegExp(reference.source).test(comment.text)).length,
    ).toBeGreaterThan(20);
    expect(comments.some((comment) => /docs\/contract\.md §\d/.test(comment.text))).toBe(true);
  });

  it("flags a planted bad path, section, anchor, tracker reference and length excuse", () => {
    const planted: Comment[] = [
      { file: "p.ts", line: 1, text: "see src/no/such-file.ts and src/index.ts" },
      {
        file: "src/ui/p.ts",
        line: 7,
        text: 'as board-guard.ts, runtime/informer.ts, no-such.ts, not "main.ts"',
      },
      { file: "p.ts", line: 2, text: "as docs/contract.md §99 says, and §4\nthen §98" },
      { file: "p.ts", line: 4, text: "docs/contract.md#no-such-heading, docs/contract.md#4-one-pass" },
      { file: "p.ts", line: 5, text: "fixed for issue 17 (finding 12); RFC 6265 §8.5" },
      { file: "p.ts", line: 6, text: "Over 400 lines, knowingly: src/**/no-such-*.ts, src/**/*.ts" },
      { file: "p.ts", line: 8, text: "as design-traps 2 says; docs/design-notes.md §2 and §5" },
      { file: "p.ts", line: 9, text: "src/reconcile/core.ts `#noSuchMember`, src/reconcile/core.ts `step`" },
    ];
    expect(findingsOf(repoRoot, planted).map((finding) => finding.at)).toEqual([
      "p.ts:1",
      "src/ui/p.ts:7",
      "p.ts:2",
      "p.ts:3",
      "p.ts:4",
      "p.ts:5",
      "p.ts:5",
      "p.ts:6",
      "p.ts:6",
      "p.ts:8",
      "p.ts:9",
    ]);
  });
});

describe("comments in src/", () => {
  it("name only repository paths that exist", () => {
    expect(problems(/does not exist/)).toEqual([]);
  });

  it("cite only docs sections that exist", () => {
    expect(problems(/no such (section|heading)/)).toEqual([]);
  });

  it("cite documents by their path, not a bare name", () => {
    expect(problems(/bare name/)).toEqual([]);
  });

  it("name only members their file holds", () => {
    expect(problems(/does not hold/)).toEqual([]);
  });

  it("cite no tracker entries (issue N, finding N)", () => {
    expect(problems(/tracker/)).toEqual([]);
  });

  it("do not excuse their file's length", () => {
    expect(problems(/length/)).toEqual([]);
  });
});
