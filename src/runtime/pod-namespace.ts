/** The namespace this process runs in as a pod: `POD_NAMESPACE`, else the service account's mount; undefined out of a pod. */
import { readFileSync } from "node:fs";

export const podNamespace = (): string | undefined => {
  if (process.env.POD_NAMESPACE !== undefined && process.env.POD_NAMESPACE !== "")
    return process.env.POD_NAMESPACE;
  try {
    return (
      readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "utf8").trim() || undefined
    );
  } catch {
    return undefined;
  }
};
