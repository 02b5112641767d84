/** `opstask schedule …` for EtcdOpsTask schedules, on the process's own streams. */
import { etcdCliKind } from "../task/etcd-kind.ts";
import { processIo } from "../task/io.ts";
import { scheduleCommand } from "./schedule-command.ts";

export const opstaskScheduleCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const io = processIo();
  try {
    return await scheduleCommand([etcdCliKind])(argv, io);
  } finally {
    io.release?.();
  }
};
