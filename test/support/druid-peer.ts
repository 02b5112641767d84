// Moved to src/devcluster/druid/peer.ts (the lab runs druid too); kept for the tests and bench that import it here.
export * from "../../src/devcluster/druid/peer.ts";
