import http from 'node:http';
import { slackSignature } from '../../src/modules/slack/slack-signature.js';
import { listenOnLoopback } from './listen.js';

export interface SlackCall {
  method: string;
  /** The bot token the call carried (Authorization: Bearer). */
  token: string | undefined;
  /** The arguments, with the JSON-encoded ones (blocks, view) decoded. */
  args: Record<string, any>;
  at: number;
}

/** What a method answers to its n-th call (1-based) instead of the usual; undefined keeps the usual. */
export type SlackResponder = (
  call: SlackCall,
  n: number,
) => { status: number; headers?: Record<string, string>; body?: unknown } | undefined;

export const SLACK_TEAM_ID = 'T0ACME';
/** The channel id chat.postMessage answers with, whatever channel name it was given. */
export const SLACK_CHANNEL_ID = 'C0APPROVALS';

const JSON_ARGUMENTS = new Set(['blocks', 'view', 'attachments', 'metadata']);

/**
 * A local stand-in for the Slack Web API: a real HTTP server that answers auth.test,
 * chat.postMessage, chat.update, chat.postEphemeral and views.open with Slack's JSON shapes, and
 * records every call. A token containing `revoked` is refused as Slack refuses one (invalid_auth).
 */
export async function startSlackApi() {
  const calls: SlackCall[] = [];
  const responders = new Map<string, SlackResponder>();
  const counts = new Map<string, number>();
  let messages = 0;

  const usual = (call: SlackCall): unknown => {
    if (call.token === undefined || call.token.includes('revoked')) return { ok: false, error: 'invalid_auth' };
    switch (call.method) {
      case 'auth.test':
        return {
          ok: true,
          url: 'https://acme.slack.com/',
          team: 'Acme',
          user: 'approval-gate',
          team_id: SLACK_TEAM_ID,
          user_id: 'U0BOT',
          bot_id: 'B0BOT',
        };
      case 'chat.postMessage': {
        messages += 1;
        const ts = `${Math.floor(Date.now() / 1000)}.${String(messages).padStart(6, '0')}`;
        return {
          ok: true,
          channel: SLACK_CHANNEL_ID,
          ts,
          message: { type: 'message', text: call.args.text, blocks: call.args.blocks, ts },
        };
      }
      case 'chat.update':
        return { ok: true, channel: call.args.channel, ts: call.args.ts, text: call.args.text };
      case 'chat.postEphemeral':
        return { ok: true, message_ts: `${Math.floor(Date.now() / 1000)}.000000` };
      case 'views.open':
        return { ok: true, view: { id: 'V0MODAL', ...call.args.view } };
      default:
        return { ok: false, error: 'unknown_method' };
    }
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const args: Record<string, any> = {};
    for (const [key, value] of form) args[key] = JSON_ARGUMENTS.has(key) ? JSON.parse(value) : value;
    const method = (req.url ?? '/').replace(/^\/api\//, '').split('?')[0]!;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const call: SlackCall = { method, token, args, at: Date.now() };
    calls.push(call);
    const n = (counts.get(method) ?? 0) + 1;
    counts.set(method, n);
    const answer = responders.get(method)?.(call, n) ?? { status: 200, body: usual(call) };
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(JSON.stringify(answer.body ?? {}));
  });
  const port = await listenOnLoopback(server);

  return {
    url: `http://127.0.0.1:${port}/api/`,
    calls,
    of: (method: string) => calls.filter((call) => call.method === method),
    respond(method: string, responder: SlackResponder) {
      responders.set(method, responder);
    },
    reset(method: string) {
      responders.delete(method);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
export type SlackApi = Awaited<ReturnType<typeof startSlackApi>>;

/** An interaction as Slack sends it: form-encoded `payload`, signed with the app's signing secret at `timestamp`. */
export function signedInteraction(signingSecret: string, payload: unknown, timestamp = Math.floor(Date.now() / 1000)) {
  const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(signingSecret, String(timestamp), Buffer.from(body)),
    },
  };
}

/** A button press on an approval message, as Slack's block_actions payload. */
export function buttonPress(
  action: 'approve' | 'reject' | 'request_changes',
  approvalId: string,
  user: string,
  team = SLACK_TEAM_ID,
  blockId = 'decision',
) {
  return {
    type: 'block_actions',
    team: { id: team, domain: 'acme' },
    user: { id: user, username: user.toLowerCase(), team_id: team },
    channel: { id: SLACK_CHANNEL_ID, name: 'approvals' },
    trigger_id: `trigger-${user}-${Date.now()}`,
    response_url: 'https://hooks.slack.invalid/actions/unused',
    message: { ts: '1.000001' },
    actions: [{ action_id: action, block_id: blockId, value: approvalId, type: 'button', action_ts: String(Date.now() / 1000) }],
  };
}

/** The submission of the modal a press opened, Reject's or Request changes' (its view as views.open received it). */
export function modalSubmission(
  view: { callback_id: string; private_metadata: string },
  user: string,
  feedback: string | null,
  team = SLACK_TEAM_ID,
) {
  return {
    type: 'view_submission',
    team: { id: team, domain: 'acme' },
    user: { id: user, team_id: team },
    view: { ...view, id: 'V0MODAL', state: { values: { feedback: { feedback: { type: 'plain_text_input', value: feedback } } } } },
  };
}
