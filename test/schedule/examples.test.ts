/**
 * Every schedule in examples/schedules/ passes what `opstask schedule create -f` checks: the schema,
 * the cron and time zone, and the template with its task kind's own decoder (EtcdOpsTask, and the
 * getting-started Greeting for the author's-own-kind example).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { greetingKind } from "../../examples/getting-started/greeting.ts";
import { checkedSchedule } from "../../src/cli/schedule/schedule-command.ts";
import { cliKindOf } from "../../src/cli/task/cli-kind.ts";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
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
