/**
 * The getting-started operator's production main, as docs/library.md ("Deploying") writes it:
 * leader election with the Lease the generated Deployment names, probes and secure metrics. Only the
 * addresses come from the environment here, so that the benchmark does not collide with other ports.
 */
import { runTaskController } from "opstask";
import { greetingKind } from "../examples/getting-started/greeting.ts";
import { handlers } from "../examples/getting-started/handlers.ts";

const stopped = new AbortController();
process.once("SIGTERM", () => stopped.abort());
process.once("SIGINT", () => stopped.abort());

try {
  const controller = await runTaskController({
    kind: greetingKind,
    handlers,
    signal: stopped.signal,
    leaderElection: {
      name: process.env.LEADER_ELECTION_ID ?? "greetings-controller",
      namespace: process.env.POD_NAMESPACE ?? "default",
    },
    probes: process.env.PROBES_ADDRESS ?? "0.0.0.0:8081",
    metrics: { address: process.env.METRICS_ADDRESS ?? "0.0.0.0:8443" },
  });
  await new Promise((resolve) => stopped.signal.addEventListener("abort", resolve, { once: true }));
  await controller.stop();
} catch (error) {
  if (!stopped.signal.aborted) throw error;
}
