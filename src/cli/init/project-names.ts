/**
 * The names a scaffolded project is made of (`opstask init`), from the command line's few: each is
 * checked here so that a bad one is an error naming its option and the fix, never a project whose
 * CRD the API server refuses.
 */

export interface ProjectNames {
  /** npm package name, e.g. `webhook-operator`. */
  readonly name: string;
  /** PascalCase kind, e.g. `Webhook`. */
  readonly kind: string;
  /** DNS subdomain with at least one dot, e.g. `ops.example.com`. */
  readonly group: string;
  /** e.g. `v1alpha1` */
  readonly version: string;
  /** lower-case plural, e.g. `webhooks`. */
  readonly plural: string;
}

/** `Webhook` → `webhooks`, `Policy` → `policies`, `Patch` → `patches` (English's common rules). */
export const pluralOf = (kind: string): string => {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
};

const checks: ReadonlyArray<{
  readonly field: keyof ProjectNames;
  readonly option: string;
  readonly valid: RegExp;
  readonly fix: string;
}> = [
  {
    field: "name",
    option: "the directory's name (or --name)",
    valid: /^[a-z0-9][a-z0-9._-]*$/,
    fix: "an npm package name: lower-case letters, digits, '.', '_' and '-'",
  },
  {
    field: "kind",
    option: "--kind",
    valid: /^[A-Z][A-Za-z0-9]{0,62}$/,
    fix: "a PascalCase name such as Webhook",
  },
  {
    field: "group",
    option: "--group",
    valid: /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/,
    fix: "a lower-case DNS name with at least one dot, such as ops.example.com",
  },
  {
    field: "version",
    option: "--version",
    valid: /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/,
    fix: "a Kubernetes API version such as v1alpha1, v1beta2 or v1",
  },
  {
    field: "plural",
    option: "--plural",
    valid: /^[a-z][a-z0-9]{0,62}$/,
    fix: "lower-case letters and digits, such as webhooks",
  },
];

/** The names, or the first bad one: which option, what it was, what to write instead. */
export const checkProjectNames = (names: ProjectNames): { readonly error: string } | undefined => {
  for (const check of checks) {
    const value = names[check.field];
    if (!check.valid.test(value)) return { error: `${check.option} "${value}": give ${check.fix}` };
  }
  return undefined;
};
