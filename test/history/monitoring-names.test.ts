/**
 * deploy/monitoring names only what the controller exports: every metric and label of every alert
 * rule and dashboard panel (and every `$labels.x` of an annotation, every `{{x}}` of a legend) is in
 * the registry the controller's own constructors build (exported-metrics.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repoRoot } from "../support/cluster.ts";
import { exportedMetrics } from "./exported-metrics.ts";
import { promqlNames } from "./promql-names.ts";

const monitoring = join(repoRoot, "deploy", "monitoring");

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

const rules = (): ReadonlyArray<Rule> =>
  (
    parse(readFileSync(join(monitoring, "opstask-rules.yaml"), "utf8")) as {
      groups: Array<{ rules: Rule[] }>;
    }
  ).groups.flatMap((group) => group.rules);

interface Dashboard {
  readonly panels: Array<{ title: string; targets?: Array<{ expr: string; legendFormat?: string }> }>;
  readonly templating: { list: Array<{ name: string; definition?: string }> };
}
const dashboard = (): Dashboard =>
  JSON.parse(readFileSync(join(monitoring, "opstask-dashboard.json"), "utf8")) as Dashboard;

/** Every name `expr` uses that the export lacks, as readable problems; and the labels its metrics carry. */
const unknownNames = (
  exported: ReadonlyMap<string, ReadonlySet<string>>,
  expr: string,
): { problems: string[]; labels: Set<string> } => {
  const { selectors, grouping } = promqlNames(expr);
  const problems: string[] = [];
  const labels = new Set<string>();
  for (const { metric, labels: named } of selectors) {
    if (metric === undefined) {
      problems.push(`a selector without a metric name: {${named.join(",")}}`);
      continue;
    }
    const known = exported.get(metric);
    if (known === undefined) {
      problems.push(`metric ${metric} is not exported`);
      continue;
    }
    for (const label of known) labels.add(label);
    for (const label of named) if (!known.has(label)) problems.push(`metric ${metric} has no label ${label}`);
  }
  for (const label of grouping)
    if (!labels.has(label))
      problems.push(
        `label ${label} (by/on/…) is on none of ${[...new Set(selectors.map((s) => s.metric))].join(", ")}`,
      );
  return { problems, labels };
};

describe("deploy/monitoring names only exported metrics and labels", () => {
  let exported: ReadonlyMap<string, ReadonlySet<string>>;
  beforeAll(async () => {
    exported = await exportedMetrics();
  });

  it("reads the registry and the expressions (the check below is not vacuous)", () => {
    expect(exported.get("opstask_task_last_success_timestamp_seconds")).toEqual(
      new Set(["kind", "namespace", "target", "type", "job", "instance"]),
    );
    expect(exported.has("opstask_task_duration_seconds_bucket")).toBe(true);
    expect(unknownNames(exported, 'max by (etcd) (opstask_tasks_totl{kind="x"})').problems).toEqual([
      "metric opstask_tasks_totl is not exported",
      "label etcd (by/on/…) is on none of opstask_tasks_totl",
    ]);
    expect(
      unknownNames(exported, 'sum by (target) (opstask_tasks_finished_total{target="x"})').problems,
    ).toEqual([
      "metric opstask_tasks_finished_total has no label target",
      "label target (by/on/…) is on none of opstask_tasks_finished_total",
    ]);
    expect(rules().length).toBeGreaterThanOrEqual(8);
    expect(
      dashboard().panels.filter((panel) => (panel.targets ?? []).length > 0).length,
    ).toBeGreaterThanOrEqual(10);
  });

  it("every alert rule: its expression, and the labels its annotations use", () => {
    const problems = rules().flatMap((rule) => {
      const { problems, labels } = unknownNames(exported, rule.expr);
      const templated = Object.values(rule.annotations ?? {}).flatMap((text) =>
        [...text.matchAll(/\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)/g)].map((match) => match[1] ?? ""),
      );
      const missing = templated.filter((label) => !labels.has(label) && !(label in (rule.labels ?? {})));
      return [
        ...problems,
        ...missing.map((label) => `annotation uses $labels.${label}, which the expression lacks`),
      ].map((problem) => `${rule.alert ?? rule.record}: ${problem}`);
    });
    expect(problems).toEqual([]);
  });

  it("every dashboard panel: its queries and legends, and the variables' queries", () => {
    const board = dashboard();
    const problems = board.panels.flatMap((panel) =>
      (panel.targets ?? []).flatMap((target) => {
        const { problems, labels } = unknownNames(exported, target.expr);
        const legend = [
          ...(target.legendFormat ?? "").matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g),
        ].map((match) => match[1] ?? "");
        return [
          ...problems,
          ...legend.filter((label) => !labels.has(label)).map((label) => `legend uses ${label}`),
        ].map((problem) => `panel "${panel.title}": ${problem}`);
      }),
    );
    const variables = board.templating.list.flatMap((variable) => {
      const match = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(variable.definition ?? "");
      if (variable.definition === undefined) return [];
      if (match === null) return [`variable ${variable.name}: cannot read ${variable.definition}`];
      const { problems, labels } = unknownNames(exported, match[1] ?? "");
      return [
        ...problems,
        ...(labels.has(match[2] ?? "") ? [] : [`label ${match[2]} is not on the metric`]),
      ].map((problem) => `variable ${variable.name}: ${problem}`);
    });
    expect([...problems, ...variables]).toEqual([]);
  });
});
