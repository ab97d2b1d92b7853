import type { ColumnMap } from '../../data/columns.js';
import type { TeamsIntegration } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const TEAMS_INTEGRATION_COLUMNS = {
  orgId: 'org_id',
  appId: 'app_id',
  appSecret: 'app_secret',
  tenantId: 'tenant_id',
  teamId: 'team_id',
  channelId: 'channel_id',
  connectedAt: 'connected_at',
} as const satisfies ColumnMap<TeamsIntegration>;
