// Starting a single-member etcd on 127.0.0.1 free ports, for kube-apiserver's storage: with `tls`,
// HTTPS on both ports and a client certificate required (etcd-tls.ts).
import { mkdirSync } from "node:fs";
import { type Deadline, pollUntil } from "./deadline.ts";
import { type EtcdTls, etcdTlsArgs } from "./etcd-tls.ts";
import { probe } from "./http.ts";
import { freePorts } from "./ports.ts";
import { type ManagedProcess, ProcessExitedError, startProcess } from "./process.ts";

export interface EtcdOptions {
  readonly binary: string;
  readonly dataDir: string;
  readonly deadline: Deadline;
  readonly extraArgs?: readonly string[];
  /** Serve HTTPS and require client certificates signed by its CA (the control plane's etcd). */
  readonly tls?: EtcdTls;
  /** Removed by the watchdog if the parent dies (see process.ts). */
  readonly scratchDir?: string;
  readonly onLine?: (line: string) => void;
}

export interface RunningEtcd {
  readonly process: ManagedProcess;
  readonly clientUrl: string;
  /** What a client presents, when started with `tls`. */
  readonly tls?: EtcdTls;
}

const PORT_RETRIES = 3;

function etcdArgs(dataDir: string, clientUrl: string, peerUrl: string, extra: readonly string[]): string[] {
  return [
    "--name=default",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    "--initial-cluster-state=new",
    "--unsafe-no-fsync=true",
    "--log-level=warn",
    ...extra,
  ];
}

/** Starts etcd and waits until `/health` reports healthy. Retries with new ports if one was taken. */
export async function startEtcd(options: EtcdOptions): Promise<RunningEtcd> {
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  for (let attempt = 1; ; attempt++) {
    const [clientPort, peerPort] = await freePorts(2);
    const { tls } = options;
    const scheme = tls === undefined ? "http" : "https";
    const clientUrl = `${scheme}://127.0.0.1:${clientPort}`;
    const peerUrl = `${scheme}://127.0.0.1:${peerPort}`;
    const proc = startProcess({
      name: "etcd",
      command: options.binary,
      args: etcdArgs(options.dataDir, clientUrl, peerUrl, [
        ...(tls === undefined ? [] : etcdTlsArgs(tls)),
        ...(options.extraArgs ?? []),
      ]),
      ...(options.scratchDir !== undefined ? { scratchDir: options.scratchDir } : {}),
      ...(options.onLine !== undefined ? { onLine: options.onLine } : {}),
    });
    try {
      await pollUntil(
        async () => {
          const res = await probe(`${clientUrl}/health`, {
            timeoutMs: 1000,
            ...(tls === undefined ? {} : { caPem: tls.caPem, clientCertificate: tls.client }),
          });
          return res.status === 200 && res.body.includes('"health":"true"') ? true : undefined;
        },
        {
          deadline: options.deadline,
          what: "etcd /health",
          intervalMs: 100,
          abortIf: () => {
            const exited = proc.exited();
            if (exited !== undefined) {
              throw new ProcessExitedError("etcd", exited.code, exited.signal, proc.tail());
            }
          },
        },
      );
      return { process: proc, clientUrl, ...(tls === undefined ? {} : { tls }) };
    } catch (err) {
      await proc.stop(2000);
      const portClash = err instanceof ProcessExitedError && /address already in use/.test(err.logTail);
      if (!portClash || attempt >= PORT_RETRIES) throw err;
    }
  }
}
