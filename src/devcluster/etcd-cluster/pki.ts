// The TLS material of the lab's etcd cluster (src/devcluster/certificates.ts): one CA, and from it
//
//   etcd server       etcd's client port; serverAuth and clientAuth (etcd's own gRPC gateway dials
//                     etcd with it), for the client Service, every member under the peer Service,
//                     `<etcd>-local` (the sidecar's endpoint, a hostAlias to 127.0.0.1) and 127.0.0.1
//   etcd client       clientAuth, no names: what the backup-restore sidecar and the maintenance
//                     handler present to etcd (`client-cert-auth`)
//   backup-restore    the sidecar's HTTPS server; the client Service (the snapshot handler's URL,
//                     `<etcd>-client.<ns>`) and every member (a follower's sidecar hands a snapshot
//                     request on to the leader's at the leader's advertised host, verified with the
//                     etcd CA, which is why one CA signs everything)
import { issueCertificate as issue, type PemPair } from "../certificates.ts";

export type { PemPair } from "../certificates.ts";

export interface EtcdClusterPki {
  readonly ca: PemPair;
  readonly etcdServer: PemPair;
  readonly etcdClient: PemPair;
  readonly backupRestoreServer: PemPair;
}

/** Every name a client may use for the Etcd's client Service, with and without the cluster domain. */
export const clientServiceNames = (etcd: string, namespace: string): string[] => [
  `${etcd}-client`,
  `${etcd}-client.${namespace}`,
  `${etcd}-client.${namespace}.svc`,
  `${etcd}-client.${namespace}.svc.cluster.local`,
];

/** The members under the peer Service, as druid advertises them (`.svc`) and fully qualified. */
export const memberNames = (etcd: string, namespace: string): string[] => [
  `*.${etcd}-peer.${namespace}.svc`,
  `*.${etcd}-peer.${namespace}.svc.cluster.local`,
];

export const makeEtcdClusterPki = (etcd: string, namespace: string): EtcdClusterPki => {
  const ca = issue({
    subject: `${etcd} etcd CA (opstask lab)`,
    issuer: undefined,
    ca: true,
    usages: [],
    names: [],
  });
  const own = [...clientServiceNames(etcd, namespace), ...memberNames(etcd, namespace), `${etcd}-local`];
  const etcdServer = issue({
    subject: `${etcd}-server`,
    issuer: ca,
    ca: false,
    usages: ["serverAuth", "clientAuth"],
    names: [...own, "localhost", "127.0.0.1"],
  });
  const etcdClient = issue({
    subject: `${etcd}-client`,
    issuer: ca,
    ca: false,
    usages: ["clientAuth"],
    names: [],
  });
  const backupRestoreServer = issue({
    subject: `${etcd}-backup-restore`,
    issuer: ca,
    ca: false,
    usages: ["serverAuth"],
    names: own,
  });
  const pair = ({ certPem, keyPem }: PemPair): PemPair => ({ certPem, keyPem });
  return {
    ca: pair(ca),
    etcdServer: pair(etcdServer),
    etcdClient: pair(etcdClient),
    backupRestoreServer: pair(backupRestoreServer),
  };
};
