/**
 * Every schedule in examples/schedules/ passes what `opstask schedule create -f` checks: the schema,
 * the cron and time zone, and the template with its task kind's own decoder (EtcdOpsTask, and the
 * getting-started Greeting for the author's-own-kind example).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { greetingKind } from "../../examples/getting-started/greeting.ts";
import { checkedSchedule } from "../../src/cli/schedule/schedule-command.ts";
import { cliKindOf } from "../../src/cli/task/cli-kind.ts";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { scheduleResource } from "../../src/schedule/schedule-spec.ts";
import { repoRoot } from "../support/cluster.ts";

const dir = join(repoRoot, "examples", "schedules");
const kinds = [etcdCliKind, cliKindOf(greetingKind)];

describe("examples/schedules", () => {
  const files = readdirSync(dir).filter((file) => file.endsWith(".yaml"));
  it("holds the etcd examples and an author's own kind", () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });
  it.each(files)("%s is a schedule the CLI would create", async (file) => {
    const checked = await checkedSchedule(join(dir, file), kinds, "default");
    expect(checked.metadata.namespace).toBe("default");
  });
});

describe("examples/schedules/quota (issue 35 L4)", () => {
  it("is a ResourceQuota counting TaskSchedules under the resource name the apiserver counts them by", () => {
    const quota = parse(readFileSync(join(dir, "quota", "taskschedule-quota.yaml"), "utf8")) as {
      kind: string;
      spec: { hard: Record<string, string> };
    };
    expect(quota.kind).toBe("ResourceQuota");
    expect(Object.keys(quota.spec.hard)).toEqual([
      `count/${scheduleResource.plural}.${scheduleResource.group}`,
    ]);
    expect(
      Number(quota.spec.hard[`count/${scheduleResource.plural}.${scheduleResource.group}`]),
    ).toBeGreaterThan(0);
  });
});
