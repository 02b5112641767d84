/** The API layer: EtcdOpsTask and Etcd schemas, decoded types and helpers (contract §1.1, §1.3, §2). */
export * from "./config/on-demand-maintenance.ts";
export * from "./config/on-demand-snapshot.ts";
export * from "./config/on-demand-snapshot-compaction.ts";
export * from "./config/task-config.ts";
export * from "./decode-error.ts";
export * from "./etcd.ts";
export * from "./etcdopstask.ts";
export * from "./meta.ts";
export * from "./status.ts";
export * from "./status-schema.ts";
