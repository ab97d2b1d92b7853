import { pickColumns, qualified, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import type { DecisionLink } from '../../generated/prisma/client.js';
import { MEMBER_COLUMNS } from '../members/member-columns.js';
import type { MemberRole } from '../orgs/tenant.js';

import type { VoteVerdict } from '../approvals/approval-schemas.js';

/** What a link decides: each verdict a vote may have has its own link in the mail. */
export type LinkVerdict = VoteVerdict;

export interface NewDecisionLink {
  tokenHash: Uint8Array<ArrayBuffer>;
  orgId: string;
  approvalId: string;
  memberId: string;
  verdict: LinkVerdict;
  /** The approval's revision the link was sent for. */
  revision: number;
  nonce: string;
  expiresAt: Date;
}

/** A link as read by its token, with the member it decides as (their role and email now). */
export interface DecisionLinkRecord {
  orgId: string;
  approvalId: string;
  memberId: string;
  memberEmail: string;
  memberRole: MemberRole;
  verdict: LinkVerdict;
  revision: number;
  nonce: string;
  expiresAt: Date;
  usedAt: Date | null;
}

/** Every column of `decision_links`; see ColumnMap for why a new one cannot be left out. */
export const DECISION_LINK_COLUMNS = {
  tokenHash: 'token_hash',
  orgId: 'org_id',
  approvalId: 'approval_id',
  memberId: 'member_id',
  verdict: 'verdict',
  revision: 'revision',
  nonce: 'nonce',
  expiresAt: 'expires_at',
  usedAt: 'used_at',
  createdAt: 'created_at',
} as const satisfies ColumnMap<DecisionLink>;

const RECORD_COLUMNS = selectList({
  ...pickColumns(qualified('l', DECISION_LINK_COLUMNS), ['orgId', 'approvalId', 'memberId']),
  memberEmail: qualified('m', MEMBER_COLUMNS).email,
  memberRole: qualified('m', MEMBER_COLUMNS).role,
  ...pickColumns(qualified('l', DECISION_LINK_COLUMNS), ['verdict', 'revision', 'nonce', 'expiresAt', 'usedAt']),
} satisfies ColumnMap<DecisionLinkRecord>);

/** A link used by a statement: its token, to tell the link used from its sibling, and when. */
type UsedLink = { tokenHash: Buffer; usedAt: Date };
const USED_COLUMNS = selectList(pickColumns(DECISION_LINK_COLUMNS, ['tokenHash', 'usedAt']) satisfies ColumnMap<UsedLink>);

/** decision_links: only token hashes; a member's links of one approval (one per verdict) are used together. */
export class DecisionLinkStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Stores a link, replacing an unused one of the same approval, member and verdict (a mail sent
   * again after a failure that proves the first never left carries new tokens), or one, used or
   * not, of an earlier revision (a revised request is mailed again, with links of its own).
   */
  async save(link: NewDecisionLink): Promise<void> {
    await this.sql.query(
      'decision-link-save',
      `INSERT INTO decision_links (token_hash, org_id, approval_id, member_id, verdict, nonce, expires_at, revision)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (approval_id, member_id, verdict) DO UPDATE
         SET token_hash = EXCLUDED.token_hash, nonce = EXCLUDED.nonce, expires_at = EXCLUDED.expires_at, created_at = clock_timestamp(),
             revision = EXCLUDED.revision, used_at = NULL
         WHERE decision_links.used_at IS NULL OR decision_links.revision < EXCLUDED.revision`,
      [Buffer.from(link.tokenHash), link.orgId, link.approvalId, link.memberId, link.verdict, link.nonce, link.expiresAt, link.revision],
    );
  }

  async find(tokenHash: Uint8Array<ArrayBuffer>): Promise<DecisionLinkRecord | null> {
    const [row] = await this.sql.query<DecisionLinkRecord>(
      'decision-link-find',
      `SELECT ${RECORD_COLUMNS}
       FROM decision_links l JOIN members m ON m.id = l.member_id
       WHERE l.token_hash = $1`,
      [Buffer.from(tokenHash)],
    );
    return row ?? null;
  }

  /**
   * Uses the member's links of the approval, this one and its sibling, in one conditional update:
   * of concurrent uses exactly one gets the time it set; the others get null.
   */
  async use(tokenHash: Uint8Array<ArrayBuffer>, link: Pick<DecisionLinkRecord, 'approvalId' | 'memberId'>): Promise<Date | null> {
    const rows = await this.sql.query<UsedLink>(
      'decision-link-use',
      `UPDATE decision_links SET used_at = clock_timestamp()
       WHERE approval_id = $1 AND member_id = $2 AND used_at IS NULL AND expires_at > clock_timestamp()
       RETURNING ${USED_COLUMNS}`,
      [link.approvalId, link.memberId],
    );
    return rows.find((row) => Buffer.from(tokenHash).equals(row.tokenHash))?.usedAt ?? null;
  }

  /** Gives the links back after a use that recorded no vote (a refusal, a failure), if nobody used them since. */
  async restore(link: Pick<DecisionLinkRecord, 'approvalId' | 'memberId'>, usedAt: Date): Promise<void> {
    await this.sql.query(
      'decision-link-restore',
      'UPDATE decision_links SET used_at = NULL WHERE approval_id = $1 AND member_id = $2 AND used_at = $3',
      [link.approvalId, link.memberId, usedAt],
    );
  }

  /** Maintenance: links past their approval's deadline open nothing any more. */
  async prune(graceMs: number): Promise<number> {
    const rows = await this.sql.query(
      'decision-links-prune',
      `DELETE FROM decision_links WHERE expires_at < clock_timestamp() - $1 * interval '1 millisecond' RETURNING 1`,
      [graceMs],
    );
    return rows.length;
  }
}
