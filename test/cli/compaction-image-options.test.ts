/** The compaction image policy as controller options (security finding 1, issue 16). */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadControllerOptions, readControllerOptions } from "../../src/cli/options.ts";
import { DefaultCompactionImage } from "../../src/etcd/on-demand-snapshot-compaction/job-spec.ts";

const pinned = `registry.example/etcdbrctl:v0.43.0@sha256:${"ab".repeat(32)}`;

describe("compaction image options", () => {
  it("default to the built-in image and no further allowed images", () => {
    const options = readControllerOptions([], {});
    expect(options.compactionImage).toBe(DefaultCompactionImage);
    expect(options.compactionAllowedImages).toEqual([]);
  });

  it("come from flags, the environment or the config file (compactionImage, compactionAllowedImages)", async () => {
    expect(readControllerOptions(["--compaction-image", pinned], {}).compactionImage).toBe(pinned);
    expect(
      readControllerOptions(
        ["--compaction-allowed-images", "a/b:1", "--compaction-allowed-images", "c/d:2"],
        {},
      ).compactionAllowedImages,
    ).toEqual(["a/b:1", "c/d:2"]);
    expect(readControllerOptions([], { OPSTASK_COMPACTION_IMAGE: "r/etcdbrctl:v1" }).compactionImage).toBe(
      "r/etcdbrctl:v1",
    );
    const file = join(mkdtempSync(join(tmpdir(), "opstask-options-")), "config.yaml");
    writeFileSync(file, `compactionImage: ${pinned}\ncompactionAllowedImages: [a/b:1, c/d:2]\n`);
    const fromFile = await loadControllerOptions(["--config", file], {});
    expect(fromFile.compactionImage).toBe(pinned);
    expect(fromFile.compactionAllowedImages).toEqual(["a/b:1", "c/d:2"]);
    expect(fromFile.sources.compactionImage).toBe("config");
  });

  it("take digest references (name@sha256:…, name:tag@sha256:…) as they are", () => {
    const digestOnly = `registry.example/etcdbrctl@sha256:${"cd".repeat(32)}`;
    expect(readControllerOptions(["--compaction-image", digestOnly], {}).compactionImage).toBe(digestOnly);
    expect(
      readControllerOptions([`--compaction-allowed-images=${pinned},${digestOnly}`], {})
        .compactionAllowedImages,
    ).toEqual([pinned, digestOnly]);
    expect(
      readControllerOptions([], { OPSTASK_COMPACTION_ALLOWED_IMAGES: digestOnly }).compactionAllowedImages,
    ).toEqual([digestOnly]);
    expect(() =>
      readControllerOptions(["--compaction-image", "registry.example/etcdbrctl@sha256:abc"], {}),
    ).toThrow(/for --compaction-image: expected an image reference/);
  });

  it("refuse what is not an image reference, naming the option", () => {
    expect(() => readControllerOptions(["--compaction-image", "Bad Image"], {})).toThrow(
      'invalid value "Bad Image" for --compaction-image: expected an image reference',
    );
    expect(() => readControllerOptions(["--compaction-allowed-images", "ok/x:1,NOT OK"], {})).toThrow(
      /for --compaction-allowed-images: expected image references/,
    );
  });
});
