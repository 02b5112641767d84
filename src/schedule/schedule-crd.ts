/**
 * The TaskSchedule CRD, generated from the schemas the controller decodes with (schedule-spec.ts,
 * schedule-status.ts), written to deploy/crds by scripts/gen-crd.ts. Unlike a task, a schedule's spec
 * may change (suspend, the cron, the limits); the status subresource is the controller's.
 */

import { structuralSchema } from "../library/crd/structural-schema.ts";
import type { CustomResourceDefinition } from "../library/crd/task-crd.ts";
import { ScheduleSpec, scheduleResource } from "./schedule-spec.ts";
import { ScheduleStatusSchema } from "./schedule-status.ts";

export type ScheduleCrdResult =
  | { readonly ok: true; readonly crd: CustomResourceDefinition }
  | { readonly ok: false; readonly errors: ReadonlyArray<string> };

export const scheduleCrd = (): ScheduleCrdResult => {
  const spec = structuralSchema(ScheduleSpec, "spec");
  const status = structuralSchema(ScheduleStatusSchema, "status");
  if (!spec.ok || !status.ok)
    return { ok: false, errors: [...(spec.ok ? [] : spec.errors), ...(status.ok ? [] : status.errors)] };
  const { group, version, kind, plural } = scheduleResource;
  return {
    ok: true,
    crd: {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        names: {
          kind,
          listKind: `${kind}List`,
          plural,
          singular: "taskschedule",
          shortNames: ["tsched"],
          categories: ["opstask"],
        },
        scope: "Namespaced",
        versions: [
          {
            name: version,
            served: true,
            storage: true,
            subresources: { status: {} },
            additionalPrinterColumns: [
              { name: "Schedule", type: "string", jsonPath: ".spec.schedule" },
              { name: "Kind", type: "string", jsonPath: ".spec.taskKind.kind" },
              { name: "Suspend", type: "boolean", jsonPath: ".spec.suspend" },
              { name: "Last Schedule", type: "date", jsonPath: ".status.lastScheduleTime" },
              { name: "Next Run", type: "string", jsonPath: ".status.nextRunTime" },
              { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
              { name: "Time Zone", type: "string", jsonPath: ".spec.timeZone", priority: 1 },
              { name: "Policy", type: "string", jsonPath: ".spec.concurrencyPolicy", priority: 1 },
            ],
            schema: {
              openAPIV3Schema: {
                description:
                  "Creates tasks of one kind from a template on a cron schedule (docs/schedules.md).",
                type: "object",
                required: ["spec"],
                properties: {
                  apiVersion: { type: "string" },
                  kind: { type: "string" },
                  metadata: { type: "object" },
                  spec: spec.schema,
                  status: { description: "Written by the controller only.", ...status.schema },
                },
              },
            },
          },
        ],
      },
    },
  };
};
