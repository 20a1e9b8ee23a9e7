import type { BaseCheckpointSaver } from "@langchain/langgraph";
import type { Lease, TaskStore } from "./task-store.ts";

/** A run's checkpoint refused: its task was taken over by another replica (the run is aborted). */
export class LeaseLostError extends Error {
  constructor(lease: Lease) {
    super(`task ${lease.taskId} was taken over by another replica (epoch ${lease.epoch} is stale)`);
    this.name = "LeaseLostError";
  }
}

export interface CheckpointFence {
  store: TaskStore;
  /** The lease of the run going on in a thread (a context), if one is. */
  leaseOf(threadId: string): Lease | undefined;
  /** Told the leases found lost, so their runs stop. */
  lost(leases: readonly Lease[]): void;
}

/**
 * The conversation's checkpointer, writing a thread's checkpoints only while the run in it holds its lease: a
 * replica that stalled past the replica timeout, whose context has moved on on another replica, must not make its
 * stale state the thread's latest. The lease is checked just before each write (the official savers' writes cannot
 * join our query), so a stale write needs a stall of the whole replica timeout in between. A Proxy: every other
 * method, present or to come, stays the saver's own.
 */
export function fenceCheckpointer<T extends BaseCheckpointSaver>(saver: T, fence: CheckpointFence): T {
  const check = async (config: { configurable?: Record<string, unknown> }): Promise<void> => {
    const threadId = config.configurable?.thread_id;
    const lease = typeof threadId === "string" ? fence.leaseOf(threadId) : undefined;
    if (!lease) return;
    const lost = await fence.store.lost([lease]);
    if (lost.length === 0) return;
    fence.lost(lost);
    throw new LeaseLostError(lease);
  };
  return new Proxy(saver, {
    get(target, property) {
      const inner: BaseCheckpointSaver = target;
      if (property === "put")
        return async (...args: Parameters<BaseCheckpointSaver["put"]>) => {
          await check(args[0]);
          return inner.put(...args);
        };
      if (property === "putWrites")
        return async (...args: Parameters<BaseCheckpointSaver["putWrites"]>) => {
          await check(args[0]);
          return inner.putWrites(...args);
        };
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
