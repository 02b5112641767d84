import type { V1Deployment } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { deployObjects, theOne } from "../support/deploy-manifests.ts";
import { type PodmanRunInput, podmanRunArgs } from "./pod-as-podman.ts";

const deployment = theOne<V1Deployment>(deployObjects(), "Deployment");

const input = (over: Partial<PodmanRunInput> = {}): PodmanRunInput => ({
  deployment,
  image: "sha256:abc",
  containerName: "c",
  serviceAccountDir: "/tmp/sa",
  apiserver: { host: "127.0.0.1", port: 6443 },
  metricsAddress: "127.0.0.1:1001",
  probeAddress: "127.0.0.1:1002",
  ...over,
});

const container = () => {
  const found = deployment.spec?.template.spec?.containers[0];
  if (found === undefined) throw new Error("deploy/deployment.yaml has no container");
  return found;
};

describe("the Deployment as podman arguments", () => {
  it("keeps the Deployment's arguments, moving only the listeners to loopback", () => {
    const result = podmanRunArgs(input({ extraArgs: ["--resolve=a:*:127.0.0.1"] }));
    if (!result.ok) throw new Error(result.reason);
    const after = result.args.slice(result.args.indexOf("sha256:abc") + 1);
    const expected = (container().args ?? []).map((arg) =>
      arg.startsWith("--metrics-address=")
        ? "--metrics-address=127.0.0.1:1001"
        : arg.startsWith("--probe-address=")
          ? "--probe-address=127.0.0.1:1002"
          : arg,
    );
    expect(after).toEqual([...expected, "--resolve=a:*:127.0.0.1"]);
    expect(after).not.toEqual(container().args);
  });

  it("runs as the Deployment's user with its security context, limits, env and token", () => {
    const result = podmanRunArgs(input());
    if (!result.ok) throw new Error(result.reason);
    const args = result.args.join(" ");
    expect(args).toContain("--user 65532:65532");
    expect(args).toContain("--read-only");
    expect(args).toContain("--cap-drop ALL");
    expect(args).toContain("--security-opt no-new-privileges");
    expect(args).toContain("--memory 256m");
    expect(args).toContain("--tmpfs /tmp:rw,mode=1777,size=16m");
    expect(args).toContain("--volume /tmp/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro");
    for (const variable of container().env ?? [])
      expect(args).toContain(`--env ${variable.name}=${variable.value}`);
  });

  it("refuses a Deployment without a non-root user", () => {
    const spec = deployment.spec?.template.spec;
    if (spec === undefined) throw new Error("no pod spec");
    const rootPod: V1Deployment = {
      ...deployment,
      spec: {
        ...deployment.spec,
        selector: deployment.spec?.selector ?? {},
        template: {
          ...deployment.spec?.template,
          spec: { ...spec, securityContext: {}, containers: [{ ...container(), securityContext: {} }] },
        },
      },
    };
    expect(podmanRunArgs(input({ deployment: rootPod }))).toEqual({
      ok: false,
      reason: "the Deployment must set a non-root runAsUser and a runAsGroup",
    });
  });
});
