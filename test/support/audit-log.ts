/**
 * Counting a controller's API requests from the outside: the kube-apiserver's audit log, written for
 * the given users only (Metadata level), read back between two marks. The same count for a Go
 * controller (etcd-druid, whose client-go has no request counter we can read) and for opstask.
 *
 *   const audit = auditLog(dir, [druidUser, opstaskUser]);
 *   const plane = await startControlPlane({ apiserverArgs: audit.apiserverArgs });
 *   const mark = audit.mark();  …  const requests = audit.since(mark);
 */
import { closeSync, fstatSync, openSync, readSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";

export interface AuditedRequest {
  readonly user: string;
  readonly verb: string;
  /** `etcdopstasks`, `etcdopstasks/status`, `events`, … ("" for non-resource URLs). */
  readonly resource: string;
  readonly namespace: string;
  readonly name: string;
  readonly code: number;
  /** ms since the epoch, when the apiserver received it. */
  readonly at: number;
}

export interface AuditLog {
  readonly apiserverArgs: readonly string[];
  /** The log's current end. */
  mark(): number;
  /** Requests logged after `mark` (each request once: a watch when it started, others when answered). */
  since(mark: number, until?: number): AuditedRequest[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const parseLine = (line: string): AuditedRequest | undefined => {
  let event: unknown;
  try {
    event = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(event)) return undefined;
  const verb = String(event.verb ?? "");
  // Long-running requests (watches) are logged when they start and again when they end.
  if (event.stage === "ResponseComplete" && verb === "watch") return undefined;
  if (event.stage !== "ResponseComplete" && event.stage !== "ResponseStarted") return undefined;
  const ref = isRecord(event.objectRef) ? event.objectRef : {};
  const user = isRecord(event.user) ? String(event.user.username ?? "") : "";
  const status = isRecord(event.responseStatus) ? Number(event.responseStatus.code ?? 0) : 0;
  const resource =
    ref.resource === undefined
      ? ""
      : `${String(ref.resource)}${ref.subresource === undefined ? "" : `/${String(ref.subresource)}`}`;
  return {
    user,
    verb,
    resource,
    namespace: String(ref.namespace ?? ""),
    name: String(ref.name ?? ""),
    code: status,
    at: Date.parse(String(event.requestReceivedTimestamp ?? "")),
  };
};

/** An audit policy for `users` (Metadata level, nothing else logged) and a reader of its log in `dir`. */
export const auditLog = (dir: string, users: readonly string[]): AuditLog => {
  const policy = join(dir, "audit-policy.yaml");
  const path = join(dir, "audit.log");
  writeFileSync(
    policy,
    stringify({
      apiVersion: "audit.k8s.io/v1",
      kind: "Policy",
      omitStages: ["RequestReceived"],
      rules: [{ level: "Metadata", users: [...users] }, { level: "None" }],
    }),
  );
  writeFileSync(path, "");
  const size = () => {
    const fd = openSync(path, "r");
    try {
      return fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  };
  return {
    apiserverArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${path}`,
      "--audit-log-format=json",
      "--audit-log-mode=blocking",
    ],
    mark: size,
    since: (mark, until = size()) => {
      const fd = openSync(path, "r");
      const requests: AuditedRequest[] = [];
      try {
        const chunk = Buffer.alloc(1 << 20);
        let position = mark;
        let rest = "";
        while (position < until) {
          const read = readSync(fd, chunk, 0, Math.min(chunk.length, until - position), position);
          if (read <= 0) break;
          position += read;
          const text = rest + chunk.toString("utf8", 0, read);
          const lines = text.split("\n");
          rest = lines.pop() ?? "";
          for (const line of lines) {
            const request = parseLine(line);
            if (request !== undefined) requests.push(request);
          }
        }
        const last = rest === "" ? undefined : parseLine(rest);
        if (last !== undefined) requests.push(last);
      } finally {
        closeSync(fd);
      }
      return requests;
    },
  };
};

/** Writes: everything that changes state (create, update, patch, delete, deletecollection). */
export const isWrite = (request: AuditedRequest): boolean =>
  ["create", "update", "patch", "delete", "deletecollection"].includes(request.verb);
