/**
 * The CA that verifies the backup-restore server when `Etcd.spec.backup.tls` is set (docs/contract.md §10):
 *
 * 1. the StatefulSet named like the Etcd, which must be controlled by it (controller owner reference
 *    with the Etcd's UID; kind and name are not compared, as in druid);
 * 2. its pod-template volume `backup-restore-ca` with a secret source names the CA secret;
 * 3. that Secret, in the Etcd's namespace;
 * 4. its key `tlsCASecretRef.dataKey` (default `bundle.crt`);
 * 5. the PEM certificates in it (blocks that do not parse are skipped, as Go's `AppendCertsFromPEM` does).
 *
 * §13 D8 (opstask): when the StatefulSet does not exist, is not controlled by the Etcd, or has no
 * such volume, and `tlsCASecretRef.name` is set, that secret is used instead (druid ignores the name and
 * fails). A StatefulSet that is not the Etcd's is treated as missing: its volumes say nothing about this
 * Etcd, so they are never read.
 */
import { X509Certificate } from "node:crypto";
import * as Effect from "effect/Effect";
import { DefaultCADataKey, type Etcd, type TLSConfig } from "../api/etcd.ts";
import { controllerOf, podVolumes, type StatefulSet } from "../objects.ts";
import { ObjectReader, type ReadError } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

/** The pod-template volume of the etcd StatefulSet that mounts the backup-restore CA. */
export const BackupRestoreCAVolume = "backup-restore-ca";

const objectKey = (etcd: Etcd): string => `${etcd.metadata.namespace}/${etcd.metadata.name}`;

const getStatefulSetFailure = (etcd: Etcd) => (error: ReadError) =>
  retry(
    "Failed to get StatefulSet for backup-restore CA resolution",
    ErrorCodes.getStatefulSet,
    `failed to get StatefulSet for etcd ${objectKey(etcd)}`,
    error.message,
  );

const statefulSetNotOwned = (etcd: Etcd): StepFailure =>
  failed(
    `StatefulSet for etcd ${objectKey(etcd)} not found or not owned by etcd`,
    ErrorCodes.getStatefulSet,
    "resolve backup-restore CA secret from StatefulSet",
    `StatefulSet for etcd ${objectKey(etcd)} not found or not owned`,
  );

const volumeNotFound = (etcd: Etcd): StepFailure =>
  failed(
    `backup-restore CA volume "${BackupRestoreCAVolume}" not found on StatefulSet ${objectKey(etcd)}`,
    ErrorCodes.getCASecret,
    "resolve backup-restore CA secret from StatefulSet volumes",
    `volume "${BackupRestoreCAVolume}" not found on StatefulSet ${objectKey(etcd)}`,
  );

const secretReadFailure = (etcd: Etcd, secretName: string) => (error: ReadError) =>
  (error.reason === "NotFound" ? failed : retry)(
    "Failed to get etcdbr CA secret",
    ErrorCodes.getCASecret,
    `failed to get etcdbr CA secret ${etcd.metadata.namespace}/${secretName}`,
    error.message,
  );

const isControlledBy = (statefulSet: StatefulSet, etcd: Etcd): boolean =>
  controllerOf(statefulSet)?.uid === etcd.metadata.uid;

/** §13 D8: `tlsCASecretRef.name`, when set, stands in for a missing StatefulSet or volume. */
const orFallback = (tls: TLSConfig, failure: StepFailure): Effect.Effect<string, StepFailure> => {
  const name = tls.tlsCASecretRef?.name;
  return name === undefined || name === "" ? Effect.fail(failure) : Effect.succeed(name);
};

/** The name of the CA secret (steps 1–2). */
const caSecretName = (etcd: Etcd, tls: TLSConfig): Effect.Effect<string, StepFailure, ObjectReader> =>
  ObjectReader.use((reader) => reader.getStatefulSet(etcd.metadata.namespace, etcd.metadata.name)).pipe(
    Effect.matchEffect({
      onFailure: (error) =>
        error.reason === "NotFound"
          ? orFallback(tls, statefulSetNotOwned(etcd))
          : Effect.fail(getStatefulSetFailure(etcd)(error)),
      onSuccess: (statefulSet) => {
        if (!isControlledBy(statefulSet, etcd)) return orFallback(tls, statefulSetNotOwned(etcd));
        const volume = podVolumes(statefulSet).find(
          (candidate) => candidate.name === BackupRestoreCAVolume && candidate.secret !== undefined,
        );
        return volume?.secret === undefined
          ? orFallback(tls, volumeNotFound(etcd))
          : Effect.succeed(volume.secret.secretName ?? "");
      },
    }),
  );

const pemCertificate = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** The certificates in a PEM bundle that parse, re-encoded as PEM; unparsable blocks are skipped. */
export const parsePemCertificates = (pem: string): ReadonlyArray<string> =>
  Array.from(pem.matchAll(pemCertificate), (match) => {
    try {
      return new X509Certificate(match[0]).toString();
    } catch {
      return undefined;
    }
  }).filter((certificate) => certificate !== undefined);

/** The PEM bundle of CA certificates to trust for the backup-restore server. */
export const resolveBackupRestoreCA = (
  etcd: Etcd,
  tls: TLSConfig,
): Effect.Effect<string, StepFailure, ObjectReader> =>
  Effect.gen(function* () {
    const namespace = etcd.metadata.namespace;
    const secretName = yield* caSecretName(etcd, tls);
    const secret = yield* ObjectReader.use((reader) => reader.getSecret(namespace, secretName)).pipe(
      Effect.mapError(secretReadFailure(etcd, secretName)),
    );
    const dataKey = tls.tlsCASecretRef?.dataKey ?? DefaultCADataKey;
    // Own keys only: a key such as `constructor` must not find the prototype's.
    const data =
      secret.data !== undefined && Object.hasOwn(secret.data, dataKey) ? secret.data[dataKey] : undefined;
    if (data === undefined) {
      return yield* failed(
        "CA cert data key not found in secret",
        ErrorCodes.caDataKeyNotFound,
        "CA cert data key not found in secret",
        `CA cert data key "${dataKey}" not found in secret ${namespace}/${secretName}`,
      );
    }
    const certificates = parsePemCertificates(Buffer.from(data).toString("utf8"));
    if (certificates.length === 0) {
      return yield* failed(
        "Failed to append CA certs from secret",
        ErrorCodes.appendCACerts,
        "failed to append CA certs from secret",
        `failed to append CA certs from secret ${namespace}/${secretName}`,
      );
    }
    return certificates.join("");
  });
