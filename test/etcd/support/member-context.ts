/**
 * The context `memberHandlers` gives an etcd handler (src/etcd/registry.ts): a handler context with
 * the task's config, which is the handler's own member (the registry calls a handler only for tasks
 * of its member). A test task of another member is a mistake in the test, reported as one.
 */

import type { TaskConfig } from "../../../src/etcd/api/config/task-config.ts";
import type { EtcdOpsTask } from "../../../src/etcd/api/etcdopstask.ts";
import type { HandlerContext, MemberContext } from "../../../src/index.ts";
import { handlerContext } from "../../../src/testing.ts";

type MemberConfig<Member extends TaskConfig["kind"]> = Extract<TaskConfig, { readonly kind: Member }>;

const isMember = <Member extends TaskConfig["kind"]>(
  config: TaskConfig,
  member: Member,
): config is MemberConfig<Member> => config.kind === member;

export const memberContext = <Member extends TaskConfig["kind"]>(
  member: Member,
  task: EtcdOpsTask,
  overrides: Partial<HandlerContext> = {},
): MemberContext<MemberConfig<Member>> => {
  const config = task.spec.config;
  if (!isMember(config, member)) {
    throw new Error(`the test's task has config member ${config.kind}, not ${member}`);
  }
  return { ...handlerContext(overrides), config };
};
