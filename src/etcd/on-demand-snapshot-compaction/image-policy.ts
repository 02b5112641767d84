/**
 * Which image a compaction Job may run. The Job's pod holds the Etcd's backup-store credentials (or
 * a read-write host path for a Local store), so its image is the controller operator's choice, not
 * the task author's: the controller's configured image (`--compaction-image`), or one of the images
 * the operator allows tasks to pick (`--compaction-allowed-images`). A task naming any other image
 * is Rejected before a Job exists. In etcd-druid only whoever may write the Etcd chooses that image.
 */
import * as Result from "effect/Result";
import { capText } from "../../advanced.ts";
import { DefaultCompactionImage } from "./job-spec.ts";
import { ErrorCodes, failed, type StepFailure } from "./step-failure.ts";

export interface CompactionImagePolicy {
  /** The image of a task that names none. */
  readonly defaultImage: string;
  /** Further images a task may name in `spec.config.onDemandSnapshotCompaction.image`. */
  readonly allowedImages: ReadonlyArray<string>;
}

export const DefaultCompactionImagePolicy: CompactionImagePolicy = {
  defaultImage: DefaultCompactionImage,
  allowedImages: [],
};

/** The field a task names its image in, as the error names it. */
export const ImageField = "spec.config.onDemandSnapshotCompaction.image";

/**
 * `[registry[:port]/]path[:tag][@sha256:<64 hex>]` in lower case (a container image reference as
 * the container runtimes read it), at most 512 characters. Option parsing uses it, so a typo in the
 * controller's configuration stops start-up instead of failing every compaction.
 */
const imageReference =
  /^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*(?::\d{1,5})?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$/;

export const isImageReference = (raw: string): boolean => raw.length <= 512 && imageReference.test(raw);

const notAllowed = (image: string, policy: CompactionImagePolicy): StepFailure => {
  const allowed = [policy.defaultImage, ...policy.allowedImages];
  return failed(
    "Compaction image is not allowed by the controller",
    ErrorCodes.imageNotAllowed,
    "compaction image not allowed",
    `${ImageField}: image "${capText(image, 300)}" is not among the images the controller allows ` +
      `(${allowed.map((each) => `"${each}"`).join(", ")}); remove the field to use the controller's image, ` +
      "or ask the controller's operator to add it to --compaction-allowed-images",
  );
};

/** The image the task's Job runs, or the failure (Rejected at Admit) that the task may not pick it. */
export const compactionImage = (
  requested: string | undefined,
  policy: CompactionImagePolicy,
): Result.Result<string, StepFailure> => {
  if (requested === undefined) return Result.succeed(policy.defaultImage);
  if (requested === policy.defaultImage || policy.allowedImages.includes(requested))
    return Result.succeed(requested);
  return Result.fail(notAllowed(requested, policy));
};
