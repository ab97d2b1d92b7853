#!/usr/bin/env node
// The `approval-gate-mcp` command (`npm run mcp`): an MCP server over stdio, for agents' hosts.
// stdout carries the protocol, so everything meant for people goes to stderr.
import { readFileSync } from 'node:fs';
import { createApprovalGateClient } from '@approval-gate/client';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ConfigError, loadMcpConfig } from './config.js';
import { createApprovalGateMcpServer } from './approval-tools.js';

let config;
try {
  config = loadMcpConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`approval-gate-mcp: ${error.message}\nSet APPROVAL_GATE_URL (e.g. http://localhost:3000) and APPROVAL_GATE_API_KEY.`);
  process.exit(1);
}

// This package's, from src/ (tsx) as from dist/.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
const client = createApprovalGateClient({
  baseUrl: config.APPROVAL_GATE_URL,
  apiKey: config.APPROVAL_GATE_API_KEY,
  retry: {
    onRetry: ({ attempt, delayMs, reason }) =>
      console.error(`approval-gate-mcp: attempt ${attempt} failed (${reason}); retrying in ${delayMs} ms`),
  },
});
const server = createApprovalGateMcpServer(client, version, {
  callSeconds: config.APPROVAL_GATE_MCP_CALL_SECONDS,
  taskPollIntervalMs: config.APPROVAL_GATE_MCP_TASK_POLL_MS,
});
await server.connect(new StdioServerTransport());
// The host closing stdin ends the session: stop the background waits of its tasks, so the process exits.
process.stdin.once('end', () => void server.close());
console.error(`approval-gate-mcp ${version}: serving ${config.APPROVAL_GATE_URL} over stdio`);
