import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, CreateTaskRequestHandlerExtra, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CallToolResult, Request, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { ApiError, type ApprovalGateClient, type ApprovalView } from '@approval-gate/client';
import { answer, errorAnswer } from './approval-outcome.js';

/** What a tool's `createTask` hands the store: the approval revision the task waits on, or the refusal that ended the call. */
export type TaskContext = { approval: ApprovalView } | { failure: CallToolResult };

/** `<approval id>:r<revision>`: everything needed to read the task's state back from the service. */
const APPROVAL_TASK_ID = /^([0-9a-f-]{36}):r([1-9][0-9]*)$/i;
const taskIdOf = (approval: ApprovalView) => `${approval.id}:r${approval.revision}`;

/** Pending, or escalated to a successor (which may be). */
const awaitsDecision = (approval: ApprovalView) =>
  approval.status === 'pending' || (approval.status === 'escalated' && !!approval.escalatedTo);

/** The longest one background read holds the wait of a task open before it starts the next. */
const WATCH_SECONDS = 3600;

export interface ApprovalTaskStoreOptions {
  client: ApprovalGateClient;
  /** What tasks/get advises between polls, in milliseconds. */
  pollIntervalMs: number;
  /** The longest get_approval waits, for the instruction of a pending answer. */
  maxWaitSeconds: number;
}

/**
 * MCP tasks whose state is the approval itself. A task is one revision of one approval request:
 * `working` while it (or the successor an escalation made) is pending, `completed` once it is
 * decided, expired, or revised again; its result is the approval as it is then. So tasks/get and
 * tasks/result read the service, and a task id survives a restart of this process. Only what has
 * no approval behind it lives here, for this process's session: refusals (tasks that `failed`), and
 * cancellations (cancelling a task stops waiting; the request stays with its reviewers).
 */
export class ApprovalTaskStore implements TaskStore {
  private readonly client: ApprovalGateClient;
  private readonly pollIntervalMs: number;
  private readonly maxWaitSeconds: number;
  /** Tasks made for calls that did not ask for one: such a call waits itself, within its time. */
  private readonly inline = new WeakSet<Task>();
  private readonly failures = new Map<string, { task: Task; result: CallToolResult }>();
  private readonly cancelled = new Map<string, Task>();
  private readonly watchers = new Map<string, AbortController>();

  constructor({ client, pollIntervalMs, maxWaitSeconds }: ApprovalTaskStoreOptions) {
    this.client = client;
    this.pollIntervalMs = pollIntervalMs;
    this.maxWaitSeconds = maxWaitSeconds;
  }

  async createTask({ context }: CreateTaskOptions, _requestId: unknown, request: Request): Promise<Task> {
    const given = context as TaskContext;
    const now = new Date().toISOString();
    let task: Task;
    if ('failure' in given) {
      task = { taskId: `failed:${randomUUID()}`, status: 'failed', ttl: null, createdAt: now, lastUpdatedAt: now };
      this.failures.set(task.taskId, { task, result: given.failure });
    } else {
      const { approval } = given;
      const submittedAt = approval.revisions.find((entry) => entry.revision === approval.revision)?.at ?? approval.createdAt;
      task = this.taskOf(taskIdOf(approval), { current: approval, working: awaitsDecision(approval), submittedAt });
    }
    if (request.params?.task === undefined) this.inline.add(task);
    return task;
  }

  /** Whether `task` was made for a call that did not ask for a task, and so must be answered by the call. */
  isInline(task: Task): boolean {
    return this.inline.has(task);
  }

  async getTask(taskId: string): Promise<Task | null> {
    const local = this.failures.get(taskId)?.task ?? this.cancelled.get(taskId);
    if (local) return local;
    const state = await this.read(taskId);
    return state && this.taskOf(taskId, state);
  }

  /** Results are not kept: they are read from the approval. The call only marks the task's end (see `watch`). */
  async storeTaskResult(): Promise<void> {}

  async getTaskResult(taskId: string): Promise<Result> {
    const failure = this.failures.get(taskId);
    if (failure) return failure.result;
    try {
      const state = await this.read(taskId);
      if (!state) throw new Error(`task ${taskId} not found`);
      return answer(state.current, this.maxWaitSeconds);
    } catch (error) {
      return errorAnswer(error);
    }
  }

  async updateTaskStatus(taskId: string, status: Task['status'], statusMessage?: string): Promise<void> {
    if (status !== 'cancelled') return;
    const task = await this.getTask(taskId);
    if (!task) return;
    this.watchers.get(taskId)?.abort();
    const now = new Date().toISOString();
    this.cancelled.set(taskId, { ...task, status, lastUpdatedAt: now, ...(statusMessage ? { statusMessage } : {}) });
  }

  async listTasks(): Promise<{ tasks: Task[] }> {
    throw new Error('tasks are not listed here: list_approvals lists the approval requests');
  }

  /**
   * Waits on a task's approval in the background of this session, telling the client of each
   * long read as progress and of the task's end as `notifications/tasks/status`. Only a courtesy:
   * the task's state is read from the approval whether or not this runs to its end.
   */
  watch(task: Task, approval: ApprovalView, extra: CreateTaskRequestHandlerExtra, onWait: (pending: ApprovalView) => void): void {
    const controller = new AbortController();
    this.watchers.set(task.taskId, controller);
    void (async () => {
      let current = approval;
      while (awaitsDecision(current)) {
        current = await this.client.waitForDecision(current, { wait: WATCH_SECONDS, signal: controller.signal, onWait });
      }
      await extra.taskStore.storeTaskResult(task.taskId, 'completed', {});
    })()
      .catch(() => {
        // Stopped (a cancellation, the session's end) or the service unreachable past the retries:
        // tasks/get and tasks/result read the approval themselves.
      })
      .finally(() => this.watchers.delete(task.taskId));
  }

  /** Stops every background wait: the session is over. */
  close(): void {
    for (const controller of this.watchers.values()) controller.abort();
  }

  /**
   * Where a task stands: the approval now (the end of its escalations), whether it still waits on
   * the task's revision, and when that revision was submitted. Null when there is no such task.
   */
  private async read(taskId: string): Promise<TaskState | null> {
    const match = APPROVAL_TASK_ID.exec(taskId);
    if (!match) return null;
    let approval: ApprovalView;
    try {
      approval = await this.client.getApproval(match[1]!);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
    const revision = approval.revisions.find((entry) => entry.revision === Number(match[2]));
    if (!revision) return null;
    // Revised since: this task's revision was decided (changes were asked); its answer is the approval now.
    if (approval.revision !== revision.revision) return { current: approval, working: false, submittedAt: revision.at };
    while (approval.status === 'escalated' && approval.escalatedTo) approval = await this.client.getApproval(approval.escalatedTo);
    return { current: approval, working: approval.status === 'pending', submittedAt: revision.at };
  }

  private taskOf(taskId: string, { current, working, submittedAt }: TaskState): Task {
    return {
      taskId,
      status: working ? 'working' : 'completed',
      ttl: null,
      createdAt: submittedAt,
      lastUpdatedAt: current.decidedAt ?? submittedAt,
      pollInterval: this.pollIntervalMs,
      statusMessage: working ? `Waiting for a decision on approval ${current.id}` : `Approval ${current.id} is ${current.status}`,
    };
  }
}

interface TaskState {
  current: ApprovalView;
  working: boolean;
  submittedAt: string;
}
