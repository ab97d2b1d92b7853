import { createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { pickColumns, qualified, selectList, type ColumnMap, type PgRow } from '../../data/columns.js';
import type { DataLayer, Sql } from '../../data/database.js';
import { onFirstUse } from '../../lib/first-use.js';
import { Prisma, type AuditChainHead, type AuditCheckpoint, type AuditSigningKey } from '../../generated/prisma/client.js';
import { AUDIT_CHAIN_HEAD_COLUMNS, AUDIT_CHECKPOINT_COLUMNS, AUDIT_EVENT_COLUMNS, AUDIT_SIGNING_KEY_COLUMNS } from './audit-columns.js';
import { CHECKPOINT_EVENT_TYPE } from './audit-events.js';
import type { AuditTree } from './audit-tree.js';
import { checkpointProblem, keyIdOf, signCheckpoint, type Checkpoint, type PublishedKey } from './checkpoint-signing.js';
import { signReceipt, type ReceiptSigner } from './receipt-signing.js';
import { checkpointText, signNote } from './signed-note.js';

type CheckpointRow = PgRow<AuditCheckpoint>;

/** Where the chain stands at a seq: its head's, or an event's. */
type ChainPoint = PgRow<Pick<AuditChainHead, 'seq' | 'hash'>>;

/** A checkpoint beside the hash the chain has now at its seq (null when the event is gone). */
type CheckpointAgainstChain = CheckpointRow & { chainHash: string | null };

const CHECKPOINT_COLUMNS = selectList(AUDIT_CHECKPOINT_COLUMNS);
const HEAD_POINT = selectList(pickColumns(AUDIT_CHAIN_HEAD_COLUMNS, ['seq', 'hash']));
const EVENT_POINT = selectList(pickColumns(AUDIT_EVENT_COLUMNS, ['seq', 'hash']));
const GROWN_CHAIN = selectList(pickColumns(qualified('h', AUDIT_CHAIN_HEAD_COLUMNS), ['orgId']));
const AGAINST_CHAIN = selectList({
  ...qualified('c', AUDIT_CHECKPOINT_COLUMNS),
  chainHash: `e.${AUDIT_EVENT_COLUMNS.hash}`,
} satisfies ColumnMap<CheckpointAgainstChain>);
const SIGNING_KEY_COLUMNS = selectList(AUDIT_SIGNING_KEY_COLUMNS);
const RETIRED_AT = Prisma.raw(selectList(pickColumns(AUDIT_SIGNING_KEY_COLUMNS, ['retiredAt'])));

function toCheckpoint(row: CheckpointRow): Checkpoint {
  return {
    orgId: row.orgId,
    seq: Number(row.seq),
    hash: row.hash,
    createdAt: row.createdAt.toISOString(),
    keyId: row.keyId,
    signature: row.signature,
    treeSize: Number(row.seq),
    rootHash: row.rootHash,
    note: row.note,
  };
}

export class RetiredSigningKeyError extends Error {
  override name = 'RetiredSigningKeyError';
}

/**
 * Signed checkpoints of organizations' audit chains (see docs/audit.md). A checkpoint states, under
 * an Ed25519 key kept outside the database (AUDIT_SIGNING_KEY), the hash of the chain at a seq;
 * its copies leave the database as `audit.checkpoint` webhooks, so an operator who rewrites a
 * chain consistently, hashes and head included, still contradicts what was signed before.
 */
export class CheckpointService {
  /**
   * `origin` names the log in its signed notes: the host (and port) of PUBLIC_URL, followed by
   * the organization's id.
   */
  constructor(
    private readonly data: Pick<DataLayer, 'db' | 'sql'>,
    private readonly signingKey: KeyObject | null,
    private readonly tree: AuditTree,
    private readonly originHost: string,
  ) {}

  /** The log's name in checkpoint notes, and the key name of their signature. */
  origin(orgId: string): string {
    return `${this.originHost}/${orgId}`;
  }

  /** The receipt signer, once the current key is published at GET /v1/audit/keys; null when signing is off. */
  async receiptSigner(): Promise<ReceiptSigner | null> {
    if (!this.signingKey) return null;
    const keyId = await this.registerKey();
    const key = this.signingKey;
    return (receipt) => signReceipt({ ...receipt, keyId }, key);
  }

  get enabled(): boolean {
    return this.signingKey !== null;
  }

  /**
   * Signs the chain at `seq` (its head when omitted), once: a checkpoint at a seq that has one
   * already is that one (at least once, idempotent by org and seq). Written with its outbox row,
   * which makes it an `audit.checkpoint` webhook. Null when signing is off or the chain is empty.
   */
  async checkpoint(orgId: string, seq?: number): Promise<Checkpoint | null> {
    if (!this.signingKey) return null;
    const keyId = await this.registerKey();
    const [event] = await this.data.sql.query<ChainPoint>(
      null,
      seq === undefined
        ? `SELECT ${HEAD_POINT} FROM audit_chain_heads WHERE org_id = $1 AND seq > 0`
        : `SELECT ${EVENT_POINT} FROM audit_events WHERE org_id = $1 AND seq = $2`,
      seq === undefined ? [orgId] : [orgId, seq],
    );
    if (!event) return null;
    const treeSize = Number(event.seq);
    await this.tree.catchUp(orgId, treeSize);
    const root = await this.tree.root(orgId, treeSize);
    const origin = this.origin(orgId);
    const signed: Checkpoint = {
      ...signCheckpoint({ orgId, seq: treeSize, hash: event.hash, createdAt: new Date().toISOString(), keyId }, this.signingKey),
      treeSize,
      rootHash: root.toString('hex'),
      note: signNote(checkpointText(origin, treeSize, root), origin, this.signingKey),
    };
    return this.data.db.$transaction(async (tx) => {
      const inserted = await tx.$executeRaw`
        INSERT INTO audit_checkpoints (org_id, seq, hash, created_at, key_id, signature, root_hash, note)
        VALUES (${orgId}::uuid, ${signed.seq}, ${signed.hash}, ${signed.createdAt}::timestamptz, ${signed.keyId}, ${signed.signature},
                ${signed.rootHash}, ${signed.note})
        ON CONFLICT (org_id, seq) DO NOTHING`;
      if (inserted === 0) {
        const [existing] = await tx.$queryRawUnsafe<CheckpointRow[]>(
          `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE org_id = $1::uuid AND seq = $2`,
          orgId,
          signed.seq,
        );
        return toCheckpoint(existing!);
      }
      const id = randomUUID();
      const body = { id, type: CHECKPOINT_EVENT_TYPE, createdAt: signed.createdAt, data: signed };
      await tx.$executeRaw`
        INSERT INTO outbox_messages (org_id, event_id, event_type, body)
        VALUES (${orgId}::uuid, ${id}::uuid, ${CHECKPOINT_EVENT_TYPE}, ${JSON.stringify(body)}::jsonb)`;
      return signed;
    });
  }

  /** The time trigger: signs the head of every chain that grew since its last checkpoint. */
  async checkpointGrownChains(limit: number): Promise<number> {
    if (!this.signingKey) return 0;
    const grown = await this.data.sql.query<Pick<AuditChainHead, 'orgId'>>(
      'audit-chains-grown',
      `SELECT ${GROWN_CHAIN} FROM audit_chain_heads h
       WHERE h.seq > COALESCE((SELECT max(c.seq) FROM audit_checkpoints c WHERE c.org_id = h.org_id), 0)
       LIMIT $1`,
      [limit],
    );
    for (const { orgId } of grown) await this.checkpoint(orgId);
    return grown.length;
  }

  async list(orgId: string, after: number, limit: number): Promise<Checkpoint[]> {
    const rows = await this.data.sql.query<CheckpointRow>(
      'audit-checkpoints',
      `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [orgId, after, limit],
    );
    return rows.map(toCheckpoint);
  }

  /** The organization's checkpoints from `first` to `last` (seq), for an export of that range. */
  async inRange(orgId: string, first: number, last: number, sql: Sql = this.data.sql): Promise<Checkpoint[]> {
    const rows = await sql.query<CheckpointRow>(
      'audit-checkpoints-in-range',
      `SELECT ${CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE org_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`,
      [orgId, first, last],
    );
    return rows.map(toCheckpoint);
  }

  /** Every key that has signed, current and retired: what a verifier needs, published without auth. */
  async keys(sql: Sql = this.data.sql): Promise<PublishedKey[]> {
    const rows = await sql.query<AuditSigningKey>(
      'audit-signing-keys',
      `SELECT ${SIGNING_KEY_COLUMNS} FROM audit_signing_keys ORDER BY created_at`,
      [],
    );
    return rows.map((row) => ({ ...row, createdAt: row.createdAt.toISOString(), retiredAt: row.retiredAt?.toISOString() ?? null }));
  }

  /**
   * Checks every checkpoint of the organization up to `lastSeq` against the chain as it is now:
   * a valid signature by a key that was not yet retired, over the hash the chain has at that seq.
   * Returns how many were checked and the first seq that contradicts one.
   */
  async verify(orgId: string, lastSeq: number, sql: Sql = this.data.sql): Promise<{ checked: number; brokenAt: number | null }> {
    const [rows, keys] = await Promise.all([
      sql.query<CheckpointAgainstChain>(
        'audit-checkpoints-against-chain',
        `SELECT ${AGAINST_CHAIN}
         FROM audit_checkpoints c LEFT JOIN audit_events e ON e.org_id = c.org_id AND e.seq = c.seq
         WHERE c.org_id = $1 AND c.seq <= $2 ORDER BY c.seq`,
        [orgId, lastSeq],
      ),
      this.keys(sql),
    ]);
    const broken = rows.find((row) => row.chainHash !== row.hash || checkpointProblem(toCheckpoint(row), keys) !== null);
    return { checked: rows.length, brokenAt: broken ? Number(broken.seq) : null };
  }

  /**
   * Records this process's public key as the current one, once per process, retiring the key it
   * replaces: checkpoints that key signed keep verifying, and nothing it signs later does. A key
   * that was retired before cannot come back, or an old key could sign into the past.
   */
  private readonly registerKey = onFirstUse(async () => {
    const publicKey = createPublicKey(this.signingKey!);
    const keyId = keyIdOf(publicKey);
    await this.data.db.$transaction(async (tx) => {
      await tx.$executeRaw`
        INSERT INTO audit_signing_keys (key_id, public_key) VALUES (${keyId}, ${publicKey.export({ type: 'spki', format: 'pem' }).toString()})
        ON CONFLICT (key_id) DO NOTHING`;
      const [mine] = await tx.$queryRaw<Pick<AuditSigningKey, 'retiredAt'>[]>`
        SELECT ${RETIRED_AT} FROM audit_signing_keys WHERE key_id = ${keyId}`;
      if (mine?.retiredAt)
        throw new RetiredSigningKeyError(`The audit signing key ${keyId} was retired at ${mine.retiredAt.toISOString()}; make a new one.`);
      await tx.$executeRaw`UPDATE audit_signing_keys SET retired_at = clock_timestamp() WHERE key_id <> ${keyId} AND retired_at IS NULL`;
    });
    return keyId;
  });
}
