// Free TCP ports on 127.0.0.1, chosen by the kernel (listen on port 0, then release it).
import { createServer } from "node:net";

export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close((err) => (err ? reject(err) : port > 0 ? resolve(port) : reject(new Error("no port"))));
    });
  });
}

/** `count` distinct free ports. */
export async function freePorts(count: number, host = "127.0.0.1"): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort(host));
  return [...ports];
}
