/**
 * Where the real etcd-druid comes from, for the benchmark, the coexistence test and the defect script
 * that compare opstask with it, and for the lab, where it deploys the etcd cluster
 * (src/devcluster/lab/druid-etcd.ts). druid is an external reference, never a product dependency.
 *
 * By default it is the release scripts/testbin builds from the Go module proxy (testbin/etcd-druid's
 * go.mod names the version; `scripts/testbin druid`, part of `all`), with the chart copied beside the
 * binary. Either variable overrides it:
 *
 *   OPSTASK_DRUID_BINARY   a built etcd-druid binary (its chart is then looked for at ../charts, or
 *                          taken from OPSTASK_DRUID_SOURCE)
 *   OPSTASK_DRUID_SOURCE   etcd-druid's source: a tarball made by `git archive`, or an unpacked tree
 *
 * A tarball is unpacked and built once (`go build ./cmd`, a few minutes on 2 cores) into
 * ~/.cache/opstask/etcd-druid-<commit>/, keyed by the commit `git archive` wrote into the tarball's
 * header (the file's SHA-256 when there is none).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createGunzip } from "node:zlib";
import { runTestbinScript } from "../binaries.ts";

export interface DruidPeer {
  readonly binary: string;
  /** The unpacked source (or checkout): its charts/ holds the RBAC, the operator config and the CRDs. */
  readonly sourceDir: string;
  /** Commit (or content hash) the binary was built from, when known. */
  readonly revision: string;
}

export type DruidLookup =
  | { readonly found: true; readonly peer: DruidPeer }
  | { readonly found: false; readonly reason: string };

const cacheRoot = join(homedir(), ".cache", "opstask");

/** The commit id `git archive` stores in the pax global header (`52 comment=<sha>`), if any. */
const tarballCommit = (tarball: string): Promise<string | undefined> =>
  new Promise((done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const input = createReadStream(tarball);
    const gunzip = createGunzip();
    const finish = () => {
      input.destroy();
      gunzip.destroy();
      const header = Buffer.concat(chunks).subarray(0, 1536).toString("latin1");
      done(/\d+ comment=([0-9a-f]{40})\n/.exec(header)?.[1]);
    };
    gunzip.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= 1536) finish();
    });
    gunzip.on("end", finish);
    gunzip.on("error", () => done(undefined));
    input.on("error", () => done(undefined));
    input.pipe(gunzip);
  });

const fileHash = (path: string): Promise<string> =>
  new Promise((done, fail) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => done(hash.digest("hex")))
      .on("error", fail);
  });

const run = (command: string, args: string[], cwd: string, timeoutMs: number): Promise<string> =>
  new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, CGO_ENABLED: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4000);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      fail(error);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) done(output);
      else fail(new Error(`${command} ${args.join(" ")} ended with ${code ?? signal}:\n${output}`));
    });
  });

const hasChart = (dir: string): boolean =>
  existsSync(join(dir, "charts", "templates", "clusterrole.yaml")) && existsSync(join(dir, "charts", "crds"));

/** Unpacks and builds a source tarball into the cache (once per commit); resolves with the peer. */
const buildFromTarball = async (tarball: string, log: (line: string) => void): Promise<DruidPeer> => {
  const revision = (await tarballCommit(tarball)) ?? `sha256-${(await fileHash(tarball)).slice(0, 40)}`;
  const dir = join(cacheRoot, `etcd-druid-${revision.slice(0, 12)}`);
  const sourceDir = join(dir, "src");
  const binary = join(dir, "etcd-druid");
  if (existsSync(binary) && hasChart(sourceDir)) return { binary, sourceDir, revision };
  mkdirSync(dir, { recursive: true });
  if (!hasChart(sourceDir)) {
    const unpacking = `${sourceDir}.tmp-${process.pid}`;
    rmSync(unpacking, { recursive: true, force: true });
    mkdirSync(unpacking, { recursive: true });
    await run("tar", ["-xzf", tarball, "-C", unpacking], dir, 120_000);
    rmSync(sourceDir, { recursive: true, force: true });
    renameSync(unpacking, sourceDir);
  }
  log(`building etcd-druid ${revision.slice(0, 12)} from ${tarball} (a few minutes on 2 cores)`);
  const building = `${binary}.tmp-${process.pid}`;
  await run("go", ["build", "-o", building, "./cmd"], sourceDir, 40 * 60_000);
  renameSync(building, binary);
  return { binary, sourceDir, revision };
};

/** Whether a variable names a druid to use instead of testbin's (vitest.config.ts asks too). */
export const druidOverridden = (env: NodeJS.ProcessEnv = process.env): boolean =>
  [env.OPSTASK_DRUID_BINARY, env.OPSTASK_DRUID_SOURCE].some((value) => value !== undefined && value !== "");

/** testbin's druid, run as `<chart>/bin/etcd-druid` (its field manager is the command's file name). */
const testbinPeer = (paths: ReadonlyMap<string, string>): DruidPeer | undefined => {
  const built = paths.get("etcd-druid");
  const sourceDir = paths.get("etcd-druid-chart");
  if (built === undefined || sourceDir === undefined || !hasChart(sourceDir)) return undefined;
  const binary = join(sourceDir, "bin", "etcd-druid");
  if (!existsSync(binary)) return undefined;
  return { binary, sourceDir, revision: /etcd-druid-(v[^/]+)$/.exec(built)?.[1] ?? "testbin" };
};

/**
 * The druid release scripts/testbin built, if it did: its `sourceDir` also holds its api module's
 * CRDs (`api-crds/`) and its examples (`examples/`). Builds nothing.
 */
export const builtDruid = async (): Promise<DruidPeer | undefined> => {
  const checked = await runTestbinScript(["--check", "druid"], { timeoutMs: 30_000 });
  return checked.code === 0 ? testbinPeer(checked.paths) : undefined;
};

/** The druid release scripts/testbin builds; built here when missing. */
const testbinDruid = async (log: (line: string) => void): Promise<DruidLookup> => {
  const cached = await builtDruid();
  if (cached !== undefined) return { found: true, peer: cached };
  log("building etcd-druid with scripts/testbin druid (first run only; minutes on 2 cores)");
  const built = await runTestbinScript(["druid"], { timeoutMs: 40 * 60_000, log });
  const peer = built.code === 0 ? testbinPeer(built.paths) : undefined;
  return peer === undefined
    ? {
        found: false,
        reason: `scripts/testbin druid failed (exit ${String(built.code)}):\n${built.stderrTail}`,
      }
    : { found: true, peer };
};

/**
 * Finds (or builds) druid: a variable's when one is set, else testbin's release. A given path that
 * does not work is an error worth showing, so it throws then; a failed testbin build answers absent,
 * with its output as the reason.
 */
export const findDruid = async (log: (line: string) => void = () => {}): Promise<DruidLookup> => {
  const givenBinary = process.env.OPSTASK_DRUID_BINARY;
  const givenSource = process.env.OPSTASK_DRUID_SOURCE;
  const source = givenSource !== undefined && givenSource !== "" ? resolve(givenSource) : undefined;
  if (source !== undefined && (givenBinary === undefined || givenBinary === "")) {
    if (!existsSync(source)) throw new Error(`OPSTASK_DRUID_SOURCE=${source}: no such file or directory`);
    if (statSync(source).isDirectory()) {
      if (!hasChart(source))
        throw new Error(`OPSTASK_DRUID_SOURCE=${source}: no charts/ (not druid's source?)`);
      const binary = join(source, "bin", "etcd-druid");
      if (!existsSync(binary)) {
        log(`building etcd-druid in ${source}`);
        await run("go", ["build", "-o", binary, "./cmd"], source, 40 * 60_000);
      }
      return { found: true, peer: { binary, sourceDir: source, revision: "checkout" } };
    }
    return { found: true, peer: await buildFromTarball(source, log) };
  }
  if (givenBinary !== undefined && givenBinary !== "") {
    const binary = resolve(givenBinary);
    if (!existsSync(binary)) throw new Error(`OPSTASK_DRUID_BINARY=${binary}: no such file`);
    const beside = resolve(dirname(binary), "..");
    if (hasChart(beside))
      return { found: true, peer: { binary, sourceDir: beside, revision: "given binary" } };
    if (source !== undefined && existsSync(source)) {
      // The chart (RBAC, CRDs, operator config defaults) comes from the source; the binary as given.
      const unpacked = statSync(source).isDirectory()
        ? source
        : (await buildFromTarball(source, log)).sourceDir;
      return { found: true, peer: { binary, sourceDir: unpacked, revision: "given binary" } };
    }
    throw new Error(
      `OPSTASK_DRUID_BINARY=${binary}: its chart (charts/templates/clusterrole.yaml, charts/crds) is not at ${beside}; set OPSTASK_DRUID_SOURCE to druid's source tarball or checkout`,
    );
  }
  return testbinDruid(log);
};
