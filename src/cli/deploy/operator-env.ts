/**
 * The operator's own environment variables for its controller's Deployment (`deploy-artifacts --env
 * NAME=VALUE`): checked here, so a typo is an error naming the flag instead of a Deployment the
 * apiserver refuses. NODE_OPTIONS and MALLOC_ARENA_MAX may be given to replace the generated memory
 * settings; the variables the generator derives from its other flags may not.
 */

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

/** Kubernetes' rule for an env var's name (a C identifier, with `-` and `.` also allowed). */
const envName = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Variables the Deployment sets from other options: the flag that sets each. */
const derived: Readonly<Record<string, string>> = {
  LEADER_ELECTION_ID: "--lease",
  POD_NAMESPACE: "--namespace (the pod's own namespace)",
};

/** `NAME=VALUE` assignments, in order, or the first problem with them. */
export const operatorEnv = (
  assignments: ReadonlyArray<string>,
): { readonly env: ReadonlyArray<EnvVar> } | { readonly error: string } => {
  const env: Array<EnvVar> = [];
  for (const assignment of assignments) {
    const equals = assignment.indexOf("=");
    const name = equals < 0 ? assignment : assignment.slice(0, equals);
    if (equals < 0) return { error: `--env ${assignment}: give NAME=VALUE (e.g. --env ${name}=value)` };
    if (!envName.test(name))
      return {
        error: `--env ${assignment}: "${name}" is not a valid variable name (letters, digits, _, - and ., not starting with a digit)`,
      };
    const flag = derived[name];
    if (flag !== undefined) return { error: `--env ${name}: the Deployment sets it from ${flag}; drop it` };
    if (env.some((known) => known.name === name))
      return { error: `--env ${name}: given twice; give it once` };
    env.push({ name, value: assignment.slice(equals + 1) });
  }
  return { env };
};
