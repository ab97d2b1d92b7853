import type { ColumnMap } from '../../data/columns.js';
import type { TeamsIntegration, TeamsLinkToken } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const TEAMS_INTEGRATION_COLUMNS = {
  orgId: 'org_id',
  appId: 'app_id',
  appSecret: 'app_secret',
  appCertificate: 'app_certificate',
  tenantId: 'tenant_id',
  teamId: 'team_id',
  channelId: 'channel_id',
  connectedAt: 'connected_at',
} as const satisfies ColumnMap<TeamsIntegration>;

export const TEAMS_LINK_TOKEN_COLUMNS = {
  tokenHash: 'token_hash',
  orgId: 'org_id',
  aadObjectId: 'aad_object_id',
  expiresAt: 'expires_at',
} as const satisfies ColumnMap<TeamsLinkToken>;
