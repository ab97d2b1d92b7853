/**
 * `@approval-gate/client/schemas`: the zod schemas the API validates approvals with, for a tool
 * that validates or describes them itself (the MCP server's tool arguments). Needs `zod`.
 */
export * from '../modules/approvals/approval-schemas.js';
