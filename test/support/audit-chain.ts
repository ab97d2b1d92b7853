import { createHash } from 'node:crypto';
import type { Database } from '../../src/data/database.js';

/**
 * An auditor's implementation of contract C6, written from the contract alone (no service code):
 * hash = hex(SHA-256(prevHash + JCS({seq, type, actor, data, createdAt}))).
 */
export function jcs(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  // Default sort compares UTF-16 code units, which is what RFC 8785 prescribes.
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${jcs(v)}`).join(',')}}`;
}

export interface ExportedEvent {
  seq: number;
  type: string;
  actor: string;
  data: Record<string, unknown>;
  createdAt: string;
  prevHash: string;
  hash: string;
}

export function expectedHash(event: ExportedEvent): string {
  const { seq, type, actor, data, createdAt } = event;
  return createHash('sha256')
    .update(event.prevHash + jcs({ seq, type, actor, data, createdAt }))
    .digest('hex');
}

/** The organization's chain as an export would present it, read straight from the table. */
export async function readChain(db: Database, orgId: string): Promise<ExportedEvent[]> {
  const rows = await db.auditEvent.findMany({ where: { orgId }, orderBy: { seq: 'asc' } });
  return rows.map((row) => ({
    seq: Number(row.seq),
    type: row.type,
    actor: row.actor,
    data: JSON.parse(row.data) as Record<string, unknown>,
    createdAt: row.createdAt.toISOString(),
    prevHash: row.prevHash,
    hash: row.hash,
  }));
}

/** The first problem in the chain, or null when it is intact. */
export function chainProblem(events: ExportedEvent[]): string | null {
  let previous = '0'.repeat(64);
  for (const [index, event] of events.entries()) {
    if (event.seq !== index + 1) return `seq ${event.seq} at position ${index + 1}`;
    if (event.prevHash !== previous) return `seq ${event.seq}: prevHash does not link`;
    if (event.hash !== expectedHash(event)) return `seq ${event.seq}: hash does not recompute`;
    previous = event.hash;
  }
  return null;
}
