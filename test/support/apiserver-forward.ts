/**
 * One plain-HTTP request forwarded to the kube-apiserver over HTTPS (its CA trusted), for the proxies
 * that tests and benchmarks put between a controller and the apiserver to inject faults. `onAnswer`
 * gets the apiserver's answer and passes it on to `outgoing` as the proxy wants; a failure upstream
 * ends the client's connection, and the client leaving ends the upstream request.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";

export const forwardToApiserver = (
  upstream: URL,
  caPem: string,
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  onAnswer: (answer: IncomingMessage) => void,
): void => {
  const forwarded = httpsRequest(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: incoming.method,
      path: incoming.url,
      headers: { ...incoming.headers, host: upstream.host },
      ca: caPem,
    },
    onAnswer,
  );
  forwarded.on("error", () => outgoing.destroy());
  outgoing.on("close", () => forwarded.destroy());
  incoming.pipe(forwarded);
};
