import type { DataLayer, Sql } from '../../data/database.js';
import { transactionSql } from '../../data/database.js';
import { ValidationError } from '../../lib/errors.js';
import { AUDIT_TREE_COLUMNS as TREE, AUDIT_TREE_NODE_COLUMNS as NODE } from './audit-columns.js';
import {
  CompactRange,
  consistencyRanges,
  foldRange,
  inclusionRanges,
  leafHash,
  nodeKey,
  nodesFor,
  rangeHashes,
  rangeNodes,
  type NodeId,
} from './merkle.js';

/** Events folded into the tree per transaction while catching up. */
const CATCH_UP_BATCH = 2000;

/** A batch's transaction may outlast Prisma's 5 s default on a busy database; it holds only the tree's row. */
const CATCH_UP_TIMEOUT_MS = 60_000;

export interface InclusionProof {
  leafIndex: number;
  treeSize: number;
  hashes: string[];
}

/**
 * Each organization's audit events as an RFC 6962 Merkle tree (see docs/receipts.md). The tree
 * follows the chain instead of being written with each event: the checkpoint job and the proof
 * endpoints extend it over the events appended since (catchUp), many events per transaction, so
 * the writes that append events pay nothing for it. What it stores is every complete subtree above
 * the leaves (a leaf is the hash of an event's chain hash, read from the event); a proof or a root
 * is then made of at most two subtrees per level, read in one statement for each of the two tables.
 */
export class AuditTree {
  constructor(private readonly data: Pick<DataLayer, 'db' | 'sql'>) {}

  /**
   * Extends the tree to cover the events up to `target` (the chain's head when omitted), and
   * returns how many it covers. Concurrent callers queue on the tree's row; each batch commits
   * the subtrees it completed with the size they reach, so a crash loses only the batch.
   */
  async catchUp(orgId: string, target?: number): Promise<number> {
    const goal = target ?? (await this.headSeq(orgId));
    for (;;) {
      const { size, grew } = await this.data.db.$transaction(
        async (tx) => {
          const sql = transactionSql(tx);
          await sql.query(null, 'INSERT INTO audit_trees (org_id) VALUES ($1::uuid) ON CONFLICT (org_id) DO NOTHING', [orgId]);
          const [tree] = await sql.query<{ size: string }>(
            null,
            `SELECT ${TREE.size}::text AS size FROM audit_trees WHERE ${TREE.orgId} = $1::uuid FOR UPDATE`,
            [orgId],
          );
          const from = Number(tree!.size);
          if (from >= goal) return { size: from, grew: false };
          const events = await sql.query<{ hash: string }>(
            null,
            'SELECT hash FROM audit_events WHERE org_id = $1::uuid AND seq > $2 AND seq <= $3 ORDER BY seq',
            [orgId, from, Math.min(goal, from + CATCH_UP_BATCH)],
          );
          if (events.length === 0) return { size: from, grew: false };
          const frontier = await readNodes(sql, orgId, rangeNodes(0, from));
          const range = new CompactRange(
            from,
            rangeNodes(0, from).map((node) => frontier.get(nodeKey(node))!),
          );
          const levels: number[] = [];
          const indexes: number[] = [];
          const hashes: string[] = [];
          for (const event of events)
            range.append(leafHash(event.hash), (node, hash) => {
              levels.push(node.level);
              indexes.push(node.index);
              hashes.push(hash.toString('hex'));
            });
          if (hashes.length > 0)
            await sql.query(
              null,
              `INSERT INTO audit_tree_nodes (org_id, level, idx, hash)
             SELECT $1::uuid, level, idx, decode(hash, 'hex') FROM unnest($2::smallint[], $3::bigint[], $4::text[]) AS n(level, idx, hash)
             ON CONFLICT DO NOTHING`,
              [orgId, levels, indexes, hashes],
            );
          await sql.query(null, 'UPDATE audit_trees SET size = $2 WHERE org_id = $1::uuid', [orgId, range.size]);
          return { size: range.size, grew: true };
        },
        { timeout: CATCH_UP_TIMEOUT_MS },
      );
      if (size >= goal || !grew) return size;
    }
  }

  /** The root hash of the tree of the first `size` events (which the tree must cover). */
  async root(orgId: string, size: number): Promise<Buffer> {
    const nodes = rangeNodes(0, size);
    const hashes = await readNodes(this.data.sql, orgId, nodes);
    return foldRange(nodes.map((node) => hashes.get(nodeKey(node))!));
  }

  /** RFC 6962 PATH for the event at `seq` in the tree of the first `treeSize` events. */
  async inclusion(orgId: string, seq: number, treeSize: number): Promise<InclusionProof> {
    if (seq > treeSize) throw new ValidationError([{ path: 'seq', message: `seq ${seq} is beyond treeSize ${treeSize}` }]);
    await this.cover(orgId, treeSize, 'treeSize');
    const ranges = inclusionRanges(seq - 1, treeSize);
    const nodes = await readNodes(this.data.sql, orgId, nodesFor(ranges));
    return { leafIndex: seq - 1, treeSize, hashes: rangeHashes(ranges, nodes).map((hash) => hash.toString('hex')) };
  }

  /** RFC 6962 PROOF that the tree of the first `from` events is a prefix of the tree of the first `to`. */
  async consistency(orgId: string, from: number, to: number): Promise<{ hashes: string[] }> {
    if (from > to) throw new ValidationError([{ path: 'from', message: `from ${from} is beyond to ${to}` }]);
    await this.cover(orgId, to, 'to');
    const ranges = consistencyRanges(from, to);
    const nodes = await readNodes(this.data.sql, orgId, nodesFor(ranges));
    return { hashes: rangeHashes(ranges, nodes).map((hash) => hash.toString('hex')) };
  }

  /** Makes the tree cover `size` events, refusing a size the chain has not reached. */
  private async cover(orgId: string, size: number, field: string): Promise<void> {
    const covered = await this.catchUp(orgId, size);
    if (covered < size)
      throw new ValidationError([{ path: field, message: `the audit log has ${covered} events; ${field} must be at most that` }]);
  }

  private async headSeq(orgId: string): Promise<number> {
    const [head] = await this.data.sql.query<{ seq: string }>(
      'audit-tree-head',
      'SELECT seq::text AS seq FROM audit_chain_heads WHERE org_id = $1',
      [orgId],
    );
    return Number(head?.seq ?? 0);
  }
}

/**
 * The hashes of these complete subtrees, keyed by nodeKey: leaves from their events, the others
 * from audit_tree_nodes, one statement each.
 */
async function readNodes(sql: Sql, orgId: string, nodes: readonly NodeId[]): Promise<Map<string, Buffer>> {
  const leaves = nodes.filter((node) => node.level === 0).map((node) => node.index + 1);
  const inner = nodes.filter((node) => node.level > 0);
  // One after the other: inside a transaction the two share one connection.
  const events =
    leaves.length === 0
      ? []
      : await sql.query<{ seq: string; hash: string }>(
          'audit-tree-leaves',
          'SELECT seq::text AS seq, hash FROM audit_events WHERE org_id = $1::uuid AND seq = ANY($2::bigint[])',
          [orgId, leaves],
        );
  const stored =
    inner.length === 0
      ? []
      : await sql.query<{ level: number; idx: string; hash: string }>(
          'audit-tree-nodes',
          `SELECT n.${NODE.level}::int AS level, n.${NODE.idx}::text AS idx, encode(n.${NODE.hash}, 'hex') AS hash
           FROM unnest($2::smallint[], $3::bigint[]) AS w(level, idx)
           JOIN audit_tree_nodes n ON n.${NODE.orgId} = $1::uuid AND n.${NODE.level} = w.level AND n.${NODE.idx} = w.idx`,
          [orgId, inner.map((node) => node.level), inner.map((node) => node.index)],
        );
  const hashes = new Map<string, Buffer>();
  for (const event of events) hashes.set(nodeKey({ level: 0, index: Number(event.seq) - 1 }), leafHash(event.hash));
  for (const node of stored) hashes.set(nodeKey({ level: node.level, index: Number(node.idx) }), Buffer.from(node.hash, 'hex'));
  return hashes;
}
