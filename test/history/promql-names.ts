/**
 * The metric and label names a PromQL expression uses, read without a full parser: enough for the
 * expressions of deploy/monitoring, and strict (an unknown construct yields names, never silence).
 */

export interface PromqlNames {
  /** Metric names, each with the labels its own selector names. */
  readonly selectors: ReadonlyArray<{
    readonly metric: string | undefined;
    readonly labels: ReadonlyArray<string>;
  }>;
  /** Labels of `by`, `without`, `on`, `ignoring`, `group_left`, `group_right`. */
  readonly grouping: ReadonlyArray<string>;
}

const keywords = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan", "atan2", "start", "end"]);
const identifier = /(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g;

export const promqlNames = (expr: string): PromqlNames => {
  let text = expr
    .replace(/#.*$/gm, "")
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\[[^\]]*\]/g, "");
  const grouping: string[] = [];
  text = text.replace(
    /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g,
    (_, _word, list: string) => {
      for (const label of list.split(",")) if (label.trim() !== "") grouping.push(label.trim());
      return " ";
    },
  );
  // A bare group_left / group_right (no label list).
  text = text.replace(/\b(group_left|group_right)\b/g, " ");
  const selectors: Array<{ metric: string | undefined; labels: string[] }> = [];
  text = text.replace(
    /([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g,
    (_, metric: string | undefined, body: string) => {
      const labels = [...body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map(
        (match) => match[1] ?? "",
      );
      selectors.push({ metric, labels });
      return " ";
    },
  );
  for (const match of text.matchAll(identifier)) {
    const name = match[0];
    const rest = text.slice((match.index ?? 0) + name.length);
    if (keywords.has(name) || /^\s*\(/.test(rest)) continue;
    selectors.push({ metric: name, labels: [] });
  }
  return { selectors, grouping };
};
