import { randomUUID } from 'node:crypto';
import { pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import { AUDIT_EXPORT_COLUMNS } from './audit-columns.js';

export interface AuditExport {
  id: string;
  status: 'queued' | 'running' | 'completed' | 'failed' | 'expired';
  filters: Record<string, string>;
  rowCount: string;
  byteSize: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** Where a running export stands: what it covers, and how far it got. */
export interface ExportProgress {
  /** The chain head when the export first started; it ends there however often it resumes. */
  throughSeq: number;
  lastSeq: number;
  writtenBytes: number;
  rowCount: number;
}

/**
 * A piece of the file, whole lines only, and the progress it brings the export to. Its bytes are
 * the COPY stream's chunks as they came (the last one cut at a line's end), joined only by a
 * storage that needs them whole: each copy of an export's bytes is garbage outside V8's heap, whose
 * collections took a large share of an export's time.
 */
export interface ExportPiece {
  offset: number;
  chunks: Buffer[];
  size: number;
  lastSeq: number;
  rowCount: number;
}

/** An export as it is shown, and the progress a run of it goes on from. */
type StartedExportRow = AuditExport & { throughSeq: string; lastSeq: string; writtenBytes: string };

const RECORD_COLUMNS: ColumnMap<AuditExport> = pickColumns(AUDIT_EXPORT_COLUMNS, [
  'id',
  'status',
  'filters',
  'rowCount',
  'byteSize',
  'createdAt',
  'completedAt',
]);
const COLUMNS = selectList(RECORD_COLUMNS);
const EXPIRED_COLUMNS = selectList(pickColumns(AUDIT_EXPORT_COLUMNS, ['id']));
const STARTED_COLUMNS = selectList<StartedExportRow>({
  ...RECORD_COLUMNS,
  ...pickColumns(AUDIT_EXPORT_COLUMNS, ['throughSeq', 'lastSeq', 'writtenBytes']),
});

/**
 * Bulk audit exports of one organization; every query is scoped to it. Plain SQL rather than
 * Prisma: a worker running only the export queue then never loads Prisma's query compiler,
 * whose memory would take much of that worker's budget.
 */
export class AuditExportStore {
  constructor(
    private readonly sql: Sql,
    private readonly orgId: string,
  ) {}

  private async one<Row = AuditExport>(name: string, text: string, values: unknown[]): Promise<Row | null> {
    const [row] = await this.sql.query<Row>(name, text, [this.orgId, ...values]);
    return row ?? null;
  }

  async create(filters: Record<string, string>): Promise<AuditExport> {
    const sql = `INSERT INTO audit_exports (org_id, id, filters) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`;
    return (await this.one('audit-export-create', sql, [randomUUID(), filters]))!;
  }

  find(id: string): Promise<AuditExport | null> {
    return this.one('audit-export-find', `SELECT ${COLUMNS} FROM audit_exports WHERE org_id = $1 AND id = $2`, [id]);
  }

  /**
   * Marks the export running and returns it with its progress; null when it is already finished
   * (a repeated job). A `running` export is taken again where its previous run left it: the bound
   * `through_seq` is fixed by the first run, so every run exports the same rows.
   */
  async start(id: string): Promise<{ record: AuditExport; progress: ExportProgress } | null> {
    const row = await this.one<StartedExportRow>(
      'audit-export-start',
      `UPDATE audit_exports SET status = 'running', started_at = coalesce(started_at, now()),
         through_seq = coalesce(through_seq, (SELECT seq FROM audit_chain_heads WHERE org_id = $1), 0)
       WHERE org_id = $1 AND id = $2 AND status IN ('queued', 'running')
       RETURNING ${STARTED_COLUMNS}`,
      [id],
    );
    if (!row) return null;
    const { throughSeq, lastSeq, writtenBytes, ...record } = row;
    const progress = {
      throughSeq: Number(throughSeq),
      lastSeq: Number(lastSeq),
      writtenBytes: Number(writtenBytes),
      rowCount: Number(row.rowCount),
    };
    return { record, progress };
  }

  /**
   * Saves the progress a piece brings. The progress must still be where the piece starts;
   * otherwise another run of the same export has taken over, and this one stops.
   */
  async saveProgress(id: string, piece: ExportPiece): Promise<void> {
    const saved = await this.sql.query(
      'audit-export-save-progress',
      `UPDATE audit_exports SET written_bytes = $3 + $4, last_seq = $5, row_count = $6
       WHERE org_id = $1 AND id = $2 AND status = 'running' AND written_bytes = $3 RETURNING id`,
      [this.orgId, id, piece.offset, piece.size, piece.lastSeq, piece.rowCount],
    );
    if (saved.length === 0) throw new Error(`audit export ${id} is no longer at byte ${piece.offset}: another run took it over`);
  }

  /** Starts the export's file over (its earlier bytes were lost with the disk they were on). */
  async restart(id: string): Promise<void> {
    await this.one(
      'audit-export-restart',
      `UPDATE audit_exports SET written_bytes = 0, last_seq = 0, row_count = 0 WHERE org_id = $1 AND id = $2 AND status = 'running'`,
      [id],
    );
  }

  /**
   * Marks a running export completed; false when it is no longer running (it stalled past the
   * retention and was expired meanwhile), which a late run must not bring back.
   */
  async complete(id: string, rowCount: number, byteSize: number): Promise<boolean> {
    const row = await this.one(
      'audit-export-complete',
      `UPDATE audit_exports SET status = 'completed', row_count = $3, byte_size = $4, completed_at = now()
       WHERE org_id = $1 AND id = $2 AND status = 'running' RETURNING id`,
      [id, rowCount, byteSize],
    );
    return row !== null;
  }

  /** Marks an unfinished export failed and frees its chunks; one already finished or expired stays as it is. */
  async fail(id: string): Promise<void> {
    await this.one(
      'audit-export-fail',
      `WITH failed AS (
         UPDATE audit_exports SET status = 'failed', completed_at = now()
         WHERE org_id = $1 AND id = $2 AND status IN ('queued', 'running') RETURNING id
       )
       DELETE FROM audit_export_chunks WHERE export_id IN (SELECT id FROM failed)`,
      [id],
    );
  }
}

/**
 * Marks exports older than the retention `expired` (of every organization, at most `limit`) and
 * deletes their chunks in the same statement; returns their ids, for storage kept outside the
 * database. A finished export counts from its completion; one that never finished (its job lost
 * for good, or stuck) from its creation: no export takes the whole retention to write, and its
 * chunks or partial file would otherwise be kept forever.
 */
export async function expireAuditExports(sql: Sql, retentionHours: number, limit: number): Promise<string[]> {
  const rows = await sql.query<Pick<AuditExport, 'id'>>(
    'audit-exports-expire',
    `WITH expired AS (
       UPDATE audit_exports SET status = 'expired'
       WHERE id IN (SELECT id FROM audit_exports
                    WHERE (status IN ('completed', 'failed') AND completed_at < now() - $1 * interval '1 hour')
                       OR (status IN ('queued', 'running') AND created_at < now() - $1 * interval '1 hour')
                    LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id
     ), freed AS (
       DELETE FROM audit_export_chunks WHERE export_id IN (SELECT id FROM expired)
     )
     SELECT ${EXPIRED_COLUMNS} FROM expired`,
    [retentionHours, limit],
  );
  return rows.map((row) => row.id);
}
