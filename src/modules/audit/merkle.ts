// RFC 6962 Merkle trees over an organization's audit events (see docs/receipts.md): the hashing,
// which complete subtrees a proof needs, and proof checking. Pure functions over node:crypto, so
// the service, the client and the standalone verifier share one implementation, and tests can run
// it over synthetic trees of any size.
import { createHash } from 'node:crypto';

/** A complete subtree: at `level` h, `index` i covers leaves [i * 2^h, (i + 1) * 2^h). */
export interface NodeId {
  level: number;
  index: number;
}

/** Leaf hash of an audit event: SHA-256(0x00 || the 32 bytes of its hex chain hash). */
export function leafHash(eventHash: string | Buffer): Buffer {
  const bytes = typeof eventHash === 'string' ? Buffer.from(eventHash, 'hex') : eventHash;
  return createHash('sha256').update(Buffer.of(0)).update(bytes).digest();
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash('sha256').update(Buffer.of(1)).update(left).update(right).digest();
}

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT = createHash('sha256').digest();

/** The largest power of two strictly less than n (n > 1). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The complete subtrees whose hashes make MTH(D[start:end]), largest first: the binary
 * decomposition of the range. Every range a proof names starts at a multiple of a power of two at
 * least as large as its first subtree, so each piece is a stored complete subtree.
 */
export function rangeNodes(start: number, end: number): NodeId[] {
  const nodes: NodeId[] = [];
  let at = start;
  while (at < end) {
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 <= end) size *= 2;
    nodes.push({ level: Math.log2(size), index: at / size });
    at += size;
  }
  return nodes;
}

/** MTH of a range from the hashes of its rangeNodes, in order: the right-hand pieces fold first. */
export function foldRange(hashes: readonly Buffer[]): Buffer {
  if (hashes.length === 0) return EMPTY_ROOT;
  let hash = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) hash = nodeHash(hashes[i]!, hash);
  return hash;
}

/** A range [start, end) whose MTH is one element of a proof. */
export interface ProofRange {
  start: number;
  end: number;
}

/** RFC 6962 PATH(m, D[start:end]) as the ranges of its elements, leaf side first. */
export function inclusionRanges(m: number, n: number): ProofRange[] {
  if (!(m >= 0 && m < n)) throw new RangeError(`leaf ${m} is not in a tree of size ${n}`);
  const ranges: ProofRange[] = [];
  let start = 0;
  let end = n;
  let leaf = m;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (leaf < k) {
      ranges.push({ start: start + k, end });
      end = start + k;
    } else {
      ranges.push({ start, end: start + k });
      start += k;
      leaf -= k;
    }
  }
  return ranges.reverse();
}

/** RFC 6962 PROOF(m, D[0:n]) (SUBPROOF with b = true) as the ranges of its elements, in order. */
export function consistencyRanges(m: number, n: number): ProofRange[] {
  if (!(m > 0 && m <= n)) throw new RangeError(`no consistency proof from size ${m} to ${n}`);
  const ranges: ProofRange[] = [];
  let start = 0;
  let end = n;
  let mm = m;
  let complete = true;
  while (mm !== end - start) {
    const k = splitPoint(end - start);
    if (mm <= k) {
      ranges.push({ start: start + k, end });
      end = start + k;
    } else {
      ranges.push({ start, end: start + k });
      start += k;
      mm -= k;
      complete = false;
    }
  }
  if (!complete) ranges.push({ start, end });
  return ranges.reverse();
}

/** Builds each range's MTH from a source of complete subtree hashes (keyed `level:index`). */
export function rangeHashes(ranges: readonly ProofRange[], nodes: ReadonlyMap<string, Buffer>): Buffer[] {
  return ranges.map(({ start, end }) =>
    foldRange(
      rangeNodes(start, end).map((node) => {
        const hash = nodes.get(nodeKey(node));
        if (!hash) throw new Error(`complete subtree ${nodeKey(node)} is missing`);
        return hash;
      }),
    ),
  );
}

export function nodeKey({ level, index }: NodeId): string {
  return `${level}:${index}`;
}

/** Every complete subtree the given ranges need, each once. */
export function nodesFor(ranges: readonly ProofRange[]): NodeId[] {
  const needed = new Map<string, NodeId>();
  for (const { start, end } of ranges) for (const node of rangeNodes(start, end)) needed.set(nodeKey(node), node);
  return [...needed.values()];
}

/** RFC 9162 section 2.1.3.2: the root an inclusion proof leads to from a leaf hash. */
export function rootFromInclusion(index: number, size: number, leaf: Buffer, proof: readonly Buffer[]): Buffer | null {
  if (!(index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let hash = leaf;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      hash = nodeHash(p, hash);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      hash = nodeHash(hash, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? hash : null;
}

/** RFC 9162 section 2.1.4.2: whether a consistency proof shows the tree of size m is a prefix of size n's. */
export function verifyConsistency(m: number, n: number, oldRoot: Buffer, newRoot: Buffer, proof: readonly Buffer[]): boolean {
  if (!(m > 0 && m <= n)) return false;
  if (m === n) return proof.length === 0 && oldRoot.equals(newRoot);
  if (proof.length === 0) return false;
  const path = [...proof];
  if (Number.isInteger(Math.log2(m))) path.unshift(oldRoot);
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(oldRoot) && sr.equals(newRoot);
}

/**
 * The right edge of a growing tree (a compact range from 0): the hashes of its complete subtrees,
 * largest first. Appending a leaf merges equal-sized subtrees, and each merge is a new complete
 * subtree, reported to `onNode` so that it can be stored for proofs.
 */
export class CompactRange {
  private readonly hashes: Buffer[];
  private readonly levels: number[];

  constructor(
    public size: number,
    frontier: readonly Buffer[],
  ) {
    this.levels = rangeNodes(0, size).map((node) => node.level);
    if (this.levels.length !== frontier.length) throw new Error(`a tree of size ${size} has ${this.levels.length} frontier hashes`);
    this.hashes = [...frontier];
  }

  append(leaf: Buffer, onNode: (node: NodeId, hash: Buffer) => void): void {
    let hash = leaf;
    let level = 0;
    let index = this.size;
    while (this.levels.length > 0 && this.levels[this.levels.length - 1] === level) {
      hash = nodeHash(this.hashes.pop()!, hash);
      this.levels.pop();
      level += 1;
      index = Math.floor(index / 2);
      onNode({ level, index }, hash);
    }
    this.hashes.push(hash);
    this.levels.push(level);
    this.size += 1;
  }

  root(): Buffer {
    return foldRange(this.hashes);
  }
}
