import type { ColumnMap } from '../../data/columns.js';
import type { ApiKey, Organization } from '../../generated/prisma/client.js';

// Columns of the tables read with raw SQL; see ColumnMap for why a new one cannot be left out.

export const ORGANIZATION_COLUMNS = {
  id: 'id',
  name: 'name',
  plan: 'plan',
  adminEmails: 'admin_emails',
  createdAt: 'created_at',
} as const satisfies ColumnMap<Organization>;

export const API_KEY_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  name: 'name',
  scopes: 'scopes',
  keyHash: 'key_hash',
  createdAt: 'created_at',
  revokedAt: 'revoked_at',
  ownerType: 'owner_type',
  ownerId: 'owner_id',
  ownerUnknown: 'owner_unknown',
} as const satisfies ColumnMap<ApiKey>;
