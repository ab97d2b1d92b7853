import type { ColumnMap } from '../../data/columns.js';
import type { SlackIntegration, SlackLinkToken } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const SLACK_INTEGRATION_COLUMNS = {
  orgId: 'org_id',
  teamId: 'team_id',
  channel: 'channel',
  botToken: 'bot_token',
  signingSecret: 'signing_secret',
  connectedAt: 'connected_at',
} as const satisfies ColumnMap<SlackIntegration>;

export const SLACK_LINK_TOKEN_COLUMNS = {
  tokenHash: 'token_hash',
  orgId: 'org_id',
  teamId: 'team_id',
  userId: 'user_id',
  expiresAt: 'expires_at',
} as const satisfies ColumnMap<SlackLinkToken>;
