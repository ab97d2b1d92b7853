import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CompactRange,
  consistencyRanges,
  inclusionRanges,
  leafHash,
  nodeHash,
  nodeKey,
  nodesFor,
  rangeHashes,
  rootFromInclusion,
  verifyConsistency,
  type NodeId,
  type ProofRange,
} from '../src/modules/audit/merkle.js';

/**
 * A synthetic log: the chain hash of event i (0-based) is its own for the `distinct` events and
 * one shared value for all others, so that a tree of a million events has few distinct subtrees.
 * What a range hashes to depends only on its size and which distinct events sit where in it,
 * which is the key both memos below use: remembering a pure function by its whole input.
 */
class SyntheticLog {
  private readonly distinct: number[];
  constructor(
    readonly size: number,
    distinct: Iterable<number>,
  ) {
    this.distinct = [...new Set(distinct)].filter((i) => i >= 0 && i < size).sort((a, b) => a - b);
  }

  event(i: number): Buffer {
    return createHash('sha256')
      .update(this.distinct.includes(i) ? `event ${i}` : 'an event like many others')
      .digest();
  }

  contentKey(start: number, end: number): string {
    return `${end - start}|${this.distinct.filter((i) => i >= start && i < end).map((i) => `${i - start}@${i}`)}`;
  }
}

// A reference written from RFC 6962 section 2.1 as it reads, recursion and all, to hold the
// service's iterative, stored-subtree implementation against.
const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

class Rfc6962 {
  private readonly memo = new Map<string, Buffer>();
  constructor(private readonly log: SyntheticLog) {}

  /** MTH(D[start:end]). */
  mth(start: number, end: number): Buffer {
    const n = end - start;
    if (n === 0) return sha256();
    if (n === 1) return sha256(Buffer.of(0), this.log.event(start));
    const key = this.log.contentKey(start, end);
    const known = this.memo.get(key);
    if (known) return known;
    let k = 1;
    while (k * 2 < n) k *= 2;
    const hash = sha256(Buffer.of(1), this.mth(start, start + k), this.mth(start + k, end));
    this.memo.set(key, hash);
    return hash;
  }

  /** PATH(m, D[start:end]). */
  path(m: number, start: number, end: number): Buffer[] {
    const n = end - start;
    if (n === 1) return [];
    let k = 1;
    while (k * 2 < n) k *= 2;
    return m < k
      ? [...this.path(m, start, start + k), this.mth(start + k, end)]
      : [...this.path(m - k, start + k, end), this.mth(start, start + k)];
  }

  /** PROOF(m, D[0:n]) = SUBPROOF(m, D[0:n], true). */
  proof(m: number, n: number): Buffer[] {
    return this.subproof(m, 0, n, true);
  }

  private subproof(m: number, start: number, end: number, b: boolean): Buffer[] {
    const n = end - start;
    if (m === n) return b ? [] : [this.mth(start, end)];
    let k = 1;
    while (k * 2 < n) k *= 2;
    return m <= k
      ? [...this.subproof(m, start, start + k, b), this.mth(start + k, end)]
      : [...this.subproof(m - k, start + k, end, false), this.mth(start, start + k)];
  }
}

/**
 * The complete subtrees a proof reads, as audit_tree_nodes holds them: for a small log built leaf
 * by leaf through the compact range, as the service builds them; for a big one, each from its
 * two halves (the compact range over a million appends is the catch-up's job, tested in
 * receipts.test.ts against the database).
 */
function storedNodes(log: SyntheticLog, wanted: readonly NodeId[]): { nodes: Map<string, Buffer>; root: Buffer | null } {
  if (log.size <= 4096) {
    const range = new CompactRange(0, []);
    const nodes = new Map<string, Buffer>();
    for (let i = 0; i < log.size; i++) {
      const leaf = leafHash(log.event(i));
      nodes.set(nodeKey({ level: 0, index: i }), leaf);
      range.append(leaf, (node, value) => nodes.set(nodeKey(node), value));
    }
    return { nodes, root: range.root() };
  }
  const memo = new Map<string, Buffer>();
  const subtree = (level: number, index: number): Buffer => {
    const start = index * 2 ** level;
    const key = log.contentKey(start, start + 2 ** level);
    let hash = memo.get(key);
    if (!hash) {
      hash = level === 0 ? leafHash(log.event(index)) : nodeHash(subtree(level - 1, 2 * index), subtree(level - 1, 2 * index + 1));
      memo.set(key, hash);
    }
    return hash;
  };
  return { nodes: new Map(wanted.map((node) => [nodeKey(node), subtree(node.level, node.index)])), root: null };
}

const hex = (hashes: readonly Buffer[]) => hashes.map((hash) => hash.toString('hex'));

interface InclusionCase {
  eventHash: string;
  leafIndex: number;
  treeSize: number;
  proof: string[];
  root: string;
}
interface ConsistencyCase {
  size1: number;
  size2: number;
  root1: string;
  root2: string;
  proof: string[];
}

/** The Python verifier's answers (clients/python/approval_gate/receipts.py), one per case. */
async function pythonVerdicts(
  inclusion: InclusionCase[],
  consistency: ConsistencyCase[],
): Promise<{ inclusion: boolean[]; consistency: boolean[] }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'ag-merkle-'));
  const file = path.join(directory, 'cases.json');
  await writeFile(file, JSON.stringify({ inclusion, consistency }));
  const script = `
import json, sys
from approval_gate.receipts import verify_inclusion, verify_consistency
cases = json.load(open(sys.argv[1]))
print(json.dumps({
  "inclusion": [verify_inclusion(c["eventHash"], c["leafIndex"], c["treeSize"], c["proof"], c["root"]) for c in cases["inclusion"]],
  "consistency": [verify_consistency(c["size1"], c["size2"], c["root1"], c["root2"], c["proof"]) for c in cases["consistency"]],
}))`;
  const run = spawnSync('python3', ['-c', script, file], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: path.resolve(import.meta.dirname, '../clients/python') },
  });
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { inclusion: boolean[]; consistency: boolean[] };
}

/** A proof with one hash flipped: every verifier must refuse it. */
const tampered = (proof: string[]) =>
  proof.length === 0 ? ['00'.repeat(32)] : [proof[0]!.replace(/^./, (c) => (c === '0' ? '1' : '0')), ...proof.slice(1)];

describe('the audit log as an RFC 6962 Merkle tree', () => {
  it('proves the first, a middle and the last event of trees of 1, 2, 3, 7, 8 and 1,000,001 events as RFC 6962 does', async () => {
    const inclusion: InclusionCase[] = [];
    for (const size of [1, 2, 3, 7, 8, 1_000_001]) {
      const indexes = [...new Set([0, Math.floor(size / 2), size - 1])];
      const log = new SyntheticLog(
        size,
        size > 4096 ? [...indexes, 1, 77, 65_536, 524_287, 999_998] : Array.from({ length: size }, (_, i) => i),
      );
      const reference = new Rfc6962(log);
      const plans = indexes.map((index) => ({ index, ranges: inclusionRanges(index, size) }));
      const { nodes, root: built } = storedNodes(log, nodesFor([...plans.flatMap(({ ranges }) => ranges), { start: 0, end: size }]));
      const root = rangeHashes([{ start: 0, end: size }], nodes)[0]!;
      expect(root.equals(reference.mth(0, size))).toBe(true);
      if (built) expect(built.equals(root)).toBe(true);
      for (const { index, ranges } of plans) {
        const proof = rangeHashes(ranges, nodes);
        expect(hex(proof), `leaf ${index} of ${size}`).toEqual(hex(reference.path(index, 0, size)));
        expect(rootFromInclusion(index, size, leafHash(log.event(index)), proof)?.equals(root)).toBe(true);
        expect(proof.length).toBeLessThanOrEqual(Math.ceil(Math.log2(size)));
        inclusion.push({
          eventHash: log.event(index).toString('hex'),
          leafIndex: index,
          treeSize: size,
          proof: hex(proof),
          root: root.toString('hex'),
        });
      }
    }
    const refused = inclusion.map((c) => ({ ...c, proof: tampered(c.proof) }));
    const wrongEvent = inclusion.map((c) => ({ ...c, eventHash: createHash('sha256').update('not this event').digest('hex') }));
    const python = await pythonVerdicts([...inclusion, ...refused, ...wrongEvent], []);
    expect(python.inclusion).toEqual([...inclusion.map(() => true), ...refused.map(() => false), ...wrongEvent.map(() => false)]);
  }, 60_000);

  it('proves every pair of a set of checkpoints consistent as RFC 6962 does, and refuses altered proofs', async () => {
    for (const sizes of [
      [1, 2, 3, 4, 5, 7, 8, 13, 16, 100, 1000],
      [1, 3, 8, 1000, 65_536, 1_000_000, 1_000_001],
    ]) {
      const last = sizes[sizes.length - 1]!;
      const log = new SyntheticLog(
        last,
        last > 4096 ? [0, 2, 7, 999, 65_535, 65_536, 999_999, 1_000_000] : Array.from({ length: last }, (_, i) => i),
      );
      const reference = new Rfc6962(log);
      const pairs = sizes.flatMap((m) => sizes.filter((n) => n >= m).map((n) => ({ m, n, ranges: consistencyRanges(m, n) })));
      const { nodes } = storedNodes(
        log,
        nodesFor([...pairs.flatMap(({ ranges }) => ranges), ...sizes.map((size): ProofRange => ({ start: 0, end: size }))]),
      );
      const roots = new Map(sizes.map((size) => [size, rangeHashes([{ start: 0, end: size }], nodes)[0]!]));
      for (const size of sizes) expect(roots.get(size)!.equals(reference.mth(0, size))).toBe(true);

      const cases: ConsistencyCase[] = pairs.map(({ m, n, ranges }) => {
        const proof = rangeHashes(ranges, nodes);
        expect(hex(proof), `${m} to ${n}`).toEqual(m === n ? [] : hex(reference.proof(m, n)));
        expect(verifyConsistency(m, n, roots.get(m)!, roots.get(n)!, proof), `${m} to ${n}`).toBe(true);
        return { size1: m, size2: n, root1: roots.get(m)!.toString('hex'), root2: roots.get(n)!.toString('hex'), proof: hex(proof) };
      });
      const growing = cases.filter((c) => c.size1 < c.size2);
      const altered = growing.map((c) => ({ ...c, proof: tampered(c.proof) }));
      const forked = growing.map((c) => ({ ...c, root2: createHash('sha256').update('a fork').digest('hex') }));
      for (const c of [...altered, ...forked])
        expect(
          verifyConsistency(
            c.size1,
            c.size2,
            Buffer.from(c.root1, 'hex'),
            Buffer.from(c.root2, 'hex'),
            c.proof.map((h) => Buffer.from(h, 'hex')),
          ),
        ).toBe(false);
      const python = await pythonVerdicts([], [...cases, ...altered, ...forked]);
      expect(python.consistency).toEqual([...cases.map(() => true), ...altered.map(() => false), ...forked.map(() => false)]);
    }
  }, 60_000);
});
