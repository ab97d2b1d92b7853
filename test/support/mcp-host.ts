import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ResponseMessage } from '@modelcontextprotocol/sdk/experimental/tasks';
import { CallToolResultSchema, type CallToolResult, type Task } from '@modelcontextprotocol/sdk/types.js';

/** The MCP server as an MCP host starts it: `node` with the entry point, configured by its environment. */
export const mcpServerCommand = { command: process.execPath, args: ['--import', 'tsx', 'packages/mcp/src/main.ts'] };

export interface McpHostOptions {
  /** The service the MCP server asks, and the agent's key. */
  baseUrl: string;
  apiKey: string;
  extraEnv?: Record<string, string>;
  /** Declares the client's task support. */
  withTasks?: boolean;
}

/** A host connected to its own MCP server process. */
export async function connectMcpHost({ baseUrl, apiKey, extraEnv = {}, withTasks = false }: McpHostOptions): Promise<Client> {
  const client = new Client(
    { name: 'approval-gate-test', version: '1.0.0' },
    withTasks ? { capabilities: { tasks: { cancel: {}, requests: {} } } } : {},
  );
  await client.connect(
    new StdioClientTransport({
      ...mcpServerCommand,
      env: { PATH: process.env.PATH ?? '', APPROVAL_GATE_URL: baseUrl, APPROVAL_GATE_API_KEY: apiKey, ...extraEnv },
      stderr: 'pipe',
    }),
  );
  return client;
}

/** Calls `name` as a task and collects what the stream yields, with the progress told on the way. */
export async function callAsTask(client: Client, name: string, args: Record<string, unknown>) {
  const messages: ResponseMessage<CallToolResult>[] = [];
  const progress: unknown[] = [];
  let created!: (task: Task) => void;
  const taskCreated = new Promise<Task>((resolve) => (created = resolve));
  const done = (async () => {
    for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
      task: { ttl: 600_000 },
      onprogress: (update) => progress.push(update),
    })) {
      messages.push(message);
      if (message.type === 'taskCreated') created(message.task);
    }
    return messages;
  })();
  return {
    taskCreated: Promise.race([taskCreated, done.then(() => Promise.reject(new Error(JSON.stringify(messages))))]),
    done,
    messages,
    progress,
  };
}
