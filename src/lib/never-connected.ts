/**
 * Error codes of a connection that was never made (refused, unresolvable, unreachable): nothing
 * reached the other side, so sending again cannot make it act twice. Mail, Slack, Teams and push
 * each tell from them whether a failed call may be made again.
 */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function neverConnected(code: unknown): boolean {
  return typeof code === 'string' && NEVER_CONNECTED.has(code);
}
