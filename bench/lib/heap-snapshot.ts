// What a process keeps on its JavaScript heap, by constructor: a heap snapshot taken through
// `--heapsnapshot-signal=SIGUSR2`, summed by node type and name.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface HeapShare {
  /** `object Socket`, `closure onClose`, `string`, … */
  kind: string;
  count: number;
  bytes: number;
}

interface HeapSnapshotFile {
  snapshot: {
    meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The node options that let `snapshotHeap` ask a child process for a snapshot written into `dir`. */
export function heapSnapshotNodeOptions(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(dir)) rmSync(path.join(dir, file));
  return `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;
}

/**
 * Signals the process, waits for its snapshot to be written whole, and sums every node's own size
 * by kind, largest first. Objects and closures are told apart by name, other nodes by type (and
 * V8's name for internal arrays); an object's out-of-line properties and elements count as its own
 * (`object Foo (properties)`), which shows the objects that fell back to dictionary properties.
 */
export async function snapshotHeap(pid: number, dir: string): Promise<{ totalBytes: number; shares: HeapShare[] }> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const file = await writtenSnapshot(dir, before);
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshotFile;
  const { node_fields: nodeFields, node_types: nodeTypes, edge_fields: edgeFields, edge_types: edgeTypes } = snapshot.snapshot.meta;
  const { nodes, edges, strings } = snapshot;
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((field) => nodeFields.indexOf(field));
  const [edgeTypeAt, edgeNameAt, edgeToAt] = ['type', 'name_or_index', 'to_node'].map((field) => edgeFields.indexOf(field));
  const kindOf = (node: number): string => {
    const type = nodeTypes[0][nodes[node + typeAt!]!]!;
    const named = type === 'object' || type === 'closure' || type === 'array' || type === 'hidden';
    return named ? `${type} ${strings[nodes[node + nameAt!]!]}` : type;
  };
  const backingStoreOwner = new Map<number, string>();
  let edge = 0;
  for (let node = 0; node < nodes.length; node += nodeFields.length) {
    for (let n = nodes[node + edgeCountAt!]!; n > 0; n--, edge += edgeFields.length) {
      if (edgeTypes[0][edges[edge + edgeTypeAt!]!] !== 'internal') continue;
      const name = strings[edges[edge + edgeNameAt!]!];
      if (name === 'properties' || name === 'elements') backingStoreOwner.set(edges[edge + edgeToAt!]!, `${kindOf(node)} (${name})`);
    }
  }
  const byKind = new Map<string, HeapShare>();
  let totalBytes = 0;
  for (let node = 0; node < nodes.length; node += nodeFields.length) {
    const bytes = nodes[node + sizeAt!]!;
    const kind = backingStoreOwner.get(node) ?? kindOf(node);
    const share = byKind.get(kind) ?? { kind, count: 0, bytes: 0 };
    share.count++;
    share.bytes += bytes;
    byKind.set(kind, share);
    totalBytes += bytes;
  }
  return { totalBytes, shares: [...byKind.values()].sort((a, b) => b.bytes - a.bytes) };
}

/** The new snapshot file, once it parses as a whole (its size stops growing and it ends its JSON). */
async function writtenSnapshot(dir: string, before: Set<string>): Promise<string> {
  const giveUpAt = Date.now() + 120_000;
  let lastSize = -1;
  while (Date.now() < giveUpAt) {
    await sleep(1000);
    const name = readdirSync(dir).find((entry) => !before.has(entry) && entry.endsWith('.heapsnapshot'));
    if (!name) continue;
    const file = path.join(dir, name);
    const size = statSync(file).size;
    if (size > 0 && size === lastSize && readFileSync(file, 'utf8').trimEnd().endsWith('}')) return file;
    lastSize = size;
  }
  throw new Error(`no complete heap snapshot in ${dir} after 120 s`);
}
