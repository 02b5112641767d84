/**
 * The etcd configuration (`etcd.conf.yaml` in `<etcd>-config`) rewritten for a one-member cluster of
 * member 0, as etcd-druid's recovery runbook and pull request do: `initial-cluster` reduced to member
 * 0, `initial-cluster-state: new`, and member 0's own peer and client URLs only. Member 0's URLs are
 * read from the configuration druid wrote (its `initial-cluster` entry and its `advertise-client-urls`),
 * not rebuilt from the Etcd's ports and TLS settings. Idempotent: applied twice, the same text. The
 * yaml package is loaded only when a recovery gets here (the controller does not hold it otherwise).
 */

export type SingleMemberConfig =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly problem: string };

const urlsOf = (value: unknown, member: string): ReadonlyArray<string> | undefined => {
  if (typeof value === "string") return value.split(",").filter(Boolean);
  if (typeof value !== "object" || value === null) return undefined;
  const own = (value as Record<string, unknown>)[member];
  if (Array.isArray(own)) return own.filter((url): url is string => typeof url === "string");
  return typeof own === "string" ? [own] : undefined;
};

export const singleMemberConfig = async (text: string, member: string): Promise<SingleMemberConfig> => {
  const { parse, stringify } = await import("yaml");
  let config: unknown;
  try {
    config = parse(text);
  } catch (error) {
    return {
      ok: false,
      problem: `etcd.conf.yaml is not YAML: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (typeof config !== "object" || config === null || Array.isArray(config))
    return { ok: false, problem: "etcd.conf.yaml is not a YAML mapping" };
  const fields = config as Record<string, unknown>;
  const cluster = typeof fields["initial-cluster"] === "string" ? fields["initial-cluster"] : "";
  const peer = cluster
    .split(",")
    .map((entry) => entry.split("="))
    .find(([name]) => name === member)?.[1];
  if (peer === undefined)
    return {
      ok: false,
      problem: `etcd.conf.yaml: initial-cluster has no entry for ${member} (${cluster || "empty"})`,
    };
  const clientUrls = urlsOf(fields["advertise-client-urls"], member);
  if (clientUrls === undefined || clientUrls.length === 0)
    return { ok: false, problem: `etcd.conf.yaml: advertise-client-urls has no URL for ${member}` };
  return {
    ok: true,
    text: stringify({
      ...fields,
      "initial-cluster": `${member}=${peer}`,
      "initial-cluster-state": "new",
      "initial-advertise-peer-urls": { [member]: [peer] },
      "advertise-client-urls": { [member]: clientUrls },
    }),
  };
};
