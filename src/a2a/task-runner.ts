import { randomUUID } from "node:crypto";
import { Command } from "@langchain/langgraph";
import { SpanStatusCode, type Context, type Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { RpcErrorCode, type Message, type MessageSendParams, type StreamEvent, type Task, type TaskState } from "../protocol/a2a.ts";
import { EventLog } from "./event-log.ts";
import type { Assistant } from "./graph-config.ts";
import { graphInput, resumeValue } from "./messages.ts";
import { runGraph } from "./graph-run.ts";
import { invalidParams, RpcError, taskNotFound } from "./rpc-error.ts";
import type { ReplicaBus } from "./replica-bus.ts";
import { abortLost, cancelElsewhere, endRun, endUnstored, followElsewhere, publisher, runningElsewhere } from "./replica-runs.ts";
import { busyContext, contextFor, type EndedTaskPolicy, status } from "./task-context.ts";
import type { HistoryView } from "./task-history.ts";
import type { TaskQuery } from "./task-list.ts";
import { listTasks, presentTask, type TaskList } from "./task-reads.ts";
import { ContextBusyError, type Lease, type TaskStore } from "./task-store.ts";
import { THREAD_ID_ATTRIBUTE } from "./thread-id.ts";

export interface RunnerOptions {
  store: TaskStore;
  /** Replicas on one database: runs' events and cancels between them (none for one process). */
  bus?: ReplicaBus | undefined;
  tracer: Tracer;
  logger: Logger;
  now: Clock;
  /** The billing session a run of this assistant counts toward. */
  sessionId: (assistant: Assistant) => string;
}

/** How a request is traced: the conversation's trace thread id, and the request's span as the parent. */
export interface RunTrace {
  threadId: string | undefined;
  parent: Context;
}

export interface StartedRun {
  /** The task as submitted. */
  task: Task;
  /** Every event of the run from the submitted task to the final status update. */
  events: () => AsyncIterable<StreamEvent>;
  /** The task once the run has ended (completed, failed or canceled). */
  done: Promise<Task>;
}

interface ActiveRun {
  lease: Lease;
  abort: AbortController;
  done: Promise<Task>;
  events: EventLog<StreamEvent>;
}

/**
 * Runs A2A tasks on graphs: one task per message, in the context (LangGraph thread) the message names or a new
 * one. A context runs one task at a time. Each run streams the graph with the server's checkpointer, so a
 * context's history survives restarts; its events go to every subscriber, and its end (with its billing count)
 * to the task store, under the run's lease: a run whose task another replica took over writes nothing more.
 */
export class TaskRunner {
  readonly #options: RunnerOptions;
  readonly #active = new Map<string, ActiveRun>();
  /** Context id -> the task running in it. */
  readonly #busy = new Map<string, string>();
  /**
   * A running task as it is now. Its store row stays "submitted" until the run ends: a restart fails both alike,
   * and the run saves one commit per status change.
   */
  readonly #live = new Map<string, Task>();

  constructor(options: RunnerOptions) {
    this.#options = options;
    // Another replica asked to cancel a run: it is ours if it is running here.
    options.bus?.onCancel((taskId) => this.#active.get(taskId)?.abort.abort());
  }

  /**
   * Validates the message against the task store, creates its task and starts the run. Throws an RpcError.
   * `ended`: what a message naming a task that ended gets (task-context.ts).
   */
  async start(assistant: Assistant, params: MessageSendParams, trace: RunTrace, ended: EndedTaskPolicy): Promise<StartedRun> {
    if (!assistant.hasMessages)
      throw invalidParams(`assistant ${assistant.graphId} has no "messages" key in its state; A2A needs it to carry text parts`);
    const { store, now } = this.#options;
    const message = params.message;
    const input = graphInput(message);
    const { contextId, resume } = await contextFor(this.#options.store, assistant, message, (taskId) => this.#active.has(taskId), ended);
    // Checked and taken with no await between: two messages to one context cannot both pass.
    const busyWith = this.#busy.get(contextId);
    if (busyWith !== undefined) throw busyContext(contextId, `task ${busyWith}`);
    const taskId = resume?.task.id ?? randomUUID();
    this.#busy.set(contextId, taskId);
    const userMessage: Message = { ...message, kind: "message", contextId, taskId };
    let task: Task;
    let lease: Lease | undefined;
    try {
      if (resume) {
        // The answer to the graph's question: the interrupted run goes on, in the same task.
        task = { ...resume.task, status: status("submitted", now()), history: [...(resume.task.history ?? []), userMessage] };
        lease = await store.take(task, resume.epoch, now());
        if (!lease) throw busyContext(contextId, `task ${taskId}: another request answered or canceled it meanwhile`);
      } else {
        task = { kind: "task", id: taskId, contextId, status: status("submitted", now()), history: [userMessage], artifacts: [] };
        lease = await store.create(assistant.graphId, task, now());
      }
    } catch (err) {
      this.#busy.delete(contextId);
      throw err instanceof ContextBusyError ? busyContext(contextId, "a task on another replica") : err;
    }
    const { bus, logger } = this.#options;
    const abort = new AbortController();
    const events = new EventLog<StreamEvent>(bus && publisher(bus, lease, logger, now, () => this.lost([lease])));
    events.push(task);
    const graphInputOrResume = resume ? new Command({ resume: resumeValue(message) }) : input;
    const done = this.#execute(assistant, task, graphInputOrResume, { events, signal: abort.signal, trace, lease }).finally(() => {
      this.#active.delete(taskId);
      this.#live.delete(taskId);
      this.#busy.delete(contextId);
      events.close();
    });
    // Nobody may wait for a streamed run's end: its failure is logged, never an unhandled rejection.
    done.catch((err) => logger.error({ err, taskId }, "a task's end could not be stored"));
    this.#active.set(taskId, { lease, abort, done, events });
    return { task, events: () => events.subscribe(), done };
  }

  /** The leases of the runs going on here (the replica watch checks them at each heartbeat). */
  leases(): Lease[] {
    return [...this.#active.values()].map((run) => run.lease);
  }

  /** The lease of the run going on here in a context (a LangGraph thread), if one is. */
  leaseOf(contextId: string): Lease | undefined {
    return this.#active.get(this.#busy.get(contextId) ?? "")?.lease;
  }

  /** These runs' tasks were taken over by another replica (this one stalled): each stops, and will write nothing. */
  lost(leases: readonly Lease[]): void {
    abortLost(this.#active, leases, this.#options.logger);
  }

  async #execute(
    assistant: Assistant,
    submitted: Task,
    input: unknown,
    run: { events: EventLog<StreamEvent>; signal: AbortSignal; trace: RunTrace; lease: Lease },
  ): Promise<Task> {
    const { store, tracer, logger, now } = this.#options;
    const { id: taskId, contextId } = submitted;
    const threadId = run.trace.threadId ?? contextId;
    const attributes = {
      [THREAD_ID_ATTRIBUTE]: threadId,
      "a2a.context_id": contextId,
      "a2a.task_id": taskId,
      "platform.assistant_id": assistant.graphId,
    };
    const span = tracer.startSpan(`graph ${assistant.graphId}`, { attributes }, run.trace.parent);
    const update = (state: TaskState, message?: Message): void => {
      const task = { ...submitted, status: status(state, now(), message) };
      this.#live.set(taskId, task);
      run.events.push({ kind: "status-update", taskId, contextId, status: task.status, final: false });
    };
    update("working");
    const graphRun = { taskId, contextId, threadId, signal: run.signal, logger };
    const ending = await runGraph(assistant, input, graphRun, (message) => update("working", message));
    if (ending.failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: ending.failure });
    const { added, artifacts } = ending;
    const closing = ending.message && ending.message !== added.at(-1) ? [ending.message] : [];
    const history = [...(submitted.history ?? []), ...added, ...closing];
    const task = { ...submitted, status: status(ending.state, now(), ending.message), history, artifacts };
    const sessionId = this.#options.sessionId(assistant);
    const ended = await endRun({ store, logger, ...run }, task, sessionId, now).catch((err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: "the task's end could not be stored" });
      return endUnstored({ store, logger, ...run }, submitted, sessionId, now, err);
    });
    this.#live.set(taskId, ended);
    span.setAttribute("a2a.task_state", ended.status.state);
    span.end();
    return ended;
  }

  /** The task of this assistant as it is now. Throws -32001 for a task it never gave. */
  async get(assistant: Assistant, taskId: string): Promise<Task> {
    const stored = await this.#options.store.get(taskId);
    if (!stored || stored.graphId !== assistant.graphId) throw taskNotFound(taskId);
    return this.#current(stored.task);
  }

  /** A stored task as it is now: a running one's live status, here or (its last event) on another replica. */
  async #current(task: Task): Promise<Task> {
    const live = this.#live.get(task.id);
    if (live) return live;
    // Running on another replica: its row says submitted until the run ends; its last event says how it is now.
    const { bus } = this.#options;
    const status = runningElsewhere(task, this.#active.has(task.id), bus) ? (await bus!.position(task.id)).status : undefined;
    return status ? { ...task, status } : task;
  }

  /** `task` as an answer shows it: its context's history or its own, cut to `historyLength` (task-history.ts). */
  present(task: Task, view: HistoryView): Promise<Task> {
    return presentTask(this.#options.store, task, view);
  }

  /** A page of this assistant's tasks (newest first), each as it is now, presented; and where the next page starts. */
  list(assistant: Assistant, query: Omit<TaskQuery, "graphId">, view: HistoryView): Promise<TaskList> {
    return listTasks(this.#options.store, (task) => this.#current(task), { ...query, graphId: assistant.graphId }, view);
  }

  /**
   * A task followed: first the task as it is now (as GetTask shows it), then only the events that come after that
   * (here, or from the replica running it) to the run's end. A task that has ended: that task alone.
   */
  async resubscribe(assistant: Assistant, taskId: string, view: HistoryView): Promise<AsyncIterable<StreamEvent>> {
    let task = await this.get(assistant, taskId);
    const active = this.#active.get(taskId);
    const { bus, store } = this.#options;
    // Here: the snapshot and where its events stop, read together (no await between), so none is missed or repeated.
    let events: AsyncIterable<StreamEvent> = active?.events.subscribe(active.events.length) ?? (async function* () {})();
    if (active) task = this.#live.get(taskId) ?? task;
    else task = await this.get(assistant, taskId); // its run may have ended meanwhile
    if (!active && runningElsewhere(task, false, bus)) ({ task, events } = await followElsewhere(bus!, store, task));
    const first = await this.present(task, view);
    return (async function* () {
      yield first;
      yield* events;
    })();
  }

  /** Cancels a running or waiting task and answers it canceled; a task that has ended is not cancelable (-32002). */
  async cancel(assistant: Assistant, taskId: string): Promise<Task> {
    const task = await this.get(assistant, taskId);
    const active = this.#active.get(taskId);
    if (active) {
      active.abort.abort();
      return active.done;
    }
    const { bus, store } = this.#options;
    if (runningElsewhere(task, false, bus)) return cancelElsewhere(bus!, store, taskId, task);
    if (task.status.state !== "input-required") {
      throw new RpcError(RpcErrorCode.taskNotCancelable, `Task cannot be canceled: task ${taskId} is already ${task.status.state}`);
    }
    const { now } = this.#options;
    const waiting = (await store.get(taskId))!;
    const canceled: Task = { ...waiting.task, status: status("canceled", now()) };
    // Taken meanwhile (answered, or canceled through another replica): answered as it is now.
    if (!(await store.take(canceled, waiting.epoch, now()))) return this.cancel(assistant, taskId);
    return canceled;
  }

  /** Lets running tasks finish for up to `graceMs`, then cancels the rest; resolves once every run has ended. */
  async stop(graceMs: number): Promise<void> {
    const runs = [...this.#active.values()];
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all(runs.map((run) => run.done.catch(() => undefined)));
    await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    for (const run of runs) run.abort.abort();
    await all;
  }
}
