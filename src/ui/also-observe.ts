/**
 * One observer for several listeners of `passTransitions` (metrics, the task board, the Stately
 * inspector). Its own file so that the controller can compose observers without loading the board.
 */
import type { ControllerObserver } from "../runtime/metrics.ts";

/** An observer that also tells `extra` about every pass (the board, the Stately inspector). */
export const alsoObserve = (
  observer: ControllerObserver,
  ...extra: ReadonlyArray<Pick<ControllerObserver, "passTransitions"> | undefined>
): ControllerObserver => {
  const listeners = [observer.passTransitions, ...extra.map((each) => each?.passTransitions)].filter(
    (listener) => listener !== undefined,
  );
  return listeners.length === 0
    ? observer
    : {
        ...observer,
        passTransitions: (task, pass) => {
          for (const listener of listeners) listener(task, pass);
        },
      };
};
