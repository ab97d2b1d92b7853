import type { DatabaseClient } from '../../data/database.js';
import { formatCount } from '../../lib/display-count.js';
import { LimitReachedError } from '../../lib/errors.js';

/**
 * What one organization may hold (docs/api.md#limits): creating one more is 409 `limit_reached`.
 * Fixed rather than configured: clients are written against them, as against the other limits
 * of the API.
 */
export const ORG_LIMITS = {
  policies: 1000,
  webhookEndpoints: 100,
} as const;
export type OrgLimit = keyof typeof ORG_LIMITS;

/** What a limit counts, in words for the problem's detail, and in the database. */
const COUNTED: Record<OrgLimit, { noun: string; table: string }> = {
  policies: { noun: 'policies', table: 'policies' },
  webhookEndpoints: { noun: 'webhook endpoints', table: 'webhook_endpoints' },
};

/** The 409 of a creation that would pass `limit`. */
export function limitReached(limit: OrgLimit): LimitReachedError {
  const max = ORG_LIMITS[limit];
  return new LimitReachedError(
    { name: limit, max },
    `An organization may have at most ${formatCount(max)} ${COUNTED[limit].noun}; delete one before creating another.`,
  );
}

/**
 * Whether the organization holds its `limit` already, counted under a lock of the organization
 * for that limit held until the transaction ends: creations of one kind in one organization take
 * turns from here to their commit, so concurrent ones cannot pass the limit together.
 */
export async function atLimit(tx: DatabaseClient, orgId: string, limit: OrgLimit): Promise<boolean> {
  await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(hashtextextended('approval-gate:org-limit:${limit}:' || $1, 0))`, orgId);
  const [row] = await tx.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT count(*) AS n FROM ${COUNTED[limit].table} WHERE org_id = $1::uuid`,
    orgId,
  );
  return Number(row!.n) >= ORG_LIMITS[limit];
}
