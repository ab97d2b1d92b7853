import { z } from 'zod';

/** The MCP server's environment (`npm run mcp`, `approval-gate-mcp`): which service it asks, with which key. */
const mcpEnvironmentSchema = z.object({
  APPROVAL_GATE_URL: z.url({ protocol: /^https?$/, error: 'APPROVAL_GATE_URL must be a URL with http or https' }),
  /** Needs `approvals:write` and `approvals:read`. */
  APPROVAL_GATE_API_KEY: z.string({ error: 'APPROVAL_GATE_API_KEY is required' }).min(1),
  /**
   * The longest one tool call waits for a decision before it answers "pending": under the 60 s
   * after which several MCP clients give up on a call. Tasks are not bound by it.
   */
  APPROVAL_GATE_MCP_CALL_SECONDS: z.coerce
    .number({ error: 'APPROVAL_GATE_MCP_CALL_SECONDS must be a whole number of seconds from 1 to 3600' })
    .int()
    .min(1)
    .max(3600)
    .default(50),
  /** What tasks/get advises a client between two polls of a task. */
  APPROVAL_GATE_MCP_TASK_POLL_MS: z.coerce
    .number({ error: 'APPROVAL_GATE_MCP_TASK_POLL_MS must be a whole number of milliseconds' })
    .int()
    .positive()
    .default(1_000),
});

export type McpConfig = z.output<typeof mcpEnvironmentSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once, at start; every bad variable is named in the thrown message. */
export function loadMcpConfig(env: NodeJS.ProcessEnv = process.env): McpConfig {
  // An empty variable means unset, as .env templates write optional ones.
  const result = mcpEnvironmentSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  if (!result.success) {
    throw new ConfigError(`Invalid environment configuration:\n${result.error.issues.map((issue) => `  ${issue.message}`).join('\n')}`);
  }
  return result.data;
}
