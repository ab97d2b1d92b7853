import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { DataLayer } from '../../data/database.js';
import { ConflictError, NotFoundError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { auditExportJob } from '../../jobs/audit-export.js';
import type { JobQueues } from '../../jobs/job-queues.js';
import type { Tenant } from '../orgs/tenant.js';
import { canonicalJson, CHECKPOINT_EVENT_TYPE } from './audit-events.js';
import { AuditExportFiles } from './audit-export-files.js';
import type { CheckpointService } from './checkpoint-service.js';
import type { Checkpoint } from './checkpoint-signing.js';
import { AuditExportStore, type AuditExport } from './audit-export-store.js';
import { auditExportCopySql, AuditQueryStore, type AuditEventRow } from './audit-query-store.js';
import {
  AUDIT_CSV_COLUMNS,
  type AuditEventView,
  type AuditExportView,
  type AuditFilters,
  type AuditQuery,
  type Verification,
} from './audit-schemas.js';

/** A long chain is verified in ranges of at least this many events, at most this many at once. */
const VERIFY_RANGE_MIN_EVENTS = 100_000;
const VERIFY_CONCURRENCY = 4;

/** How often a running export writes its row count for GET /v1/audit/exports/:id. */
const EXPORT_PROGRESS_INTERVAL_MS = 1000;

export interface AuditOptions {
  /** A bulk export reads through its own connection: a long COPY should not hold one of the pool's. */
  databaseUrl: string;
  exportDir: string;
}

export interface AuditPage {
  events: AuditEventRow[];
  verification?: Verification;
  checkpoints?: Checkpoint[];
}

export interface ExportDownload {
  filename: string;
  size: number;
  read(): Readable;
}

export class AuditService {
  private readonly files: AuditExportFiles;

  constructor(
    private readonly data: Pick<DataLayer, 'sql'>,
    private readonly deps: { jobs: JobQueues; logger: Logger; checkpoints: CheckpointService },
    private readonly options: AuditOptions,
  ) {
    this.files = new AuditExportFiles(options.exportDir);
  }

  private queries(orgId: string): AuditQueryStore {
    return new AuditQueryStore(this.data.sql, orgId);
  }

  private exports(orgId: string): AuditExportStore {
    return new AuditExportStore(this.data.sql, orgId);
  }

  async page(tenant: Tenant, query: AuditQuery): Promise<AuditPage> {
    const { after = 0, limit, verify, checkpoints: withCheckpoints, format: _format, ...filters } = query;
    const [events, verification] = await Promise.all([
      this.queries(tenant.orgId).page(filters, after, limit),
      verify ? this.verify(tenant.orgId) : undefined,
    ]);
    const first = events[0];
    const last = events.at(-1);
    const checkpoints =
      withCheckpoints && first && last
        ? await this.deps.checkpoints.inRange(tenant.orgId, Number(first.seq), Number(last.seq))
        : withCheckpoints
          ? []
          : undefined;
    return { events, ...(verification ? { verification } : {}), ...(checkpoints ? { checkpoints } : {}) };
  }

  /**
   * Checks the whole chain, seq 1 to the head as it is now, inside Postgres: each range is one
   * ordered pass that recomputes every hash (see `ag_verify_audit_range`), so no event crosses
   * the network and a long chain is checked on several cores at once. Then every signed
   * checkpoint up to the head: a chain rewritten consistently, hashes and head included, still
   * contradicts what was signed before (contract C14).
   */
  async verify(orgId: string): Promise<Verification> {
    const queries = this.queries(orgId);
    const head = await queries.head();
    if (head.seq === 0) return { intact: true, count: 0, headHash: null, brokenAtSeq: null, checkpoints: 0 };
    const rangeCount = Math.min(VERIFY_CONCURRENCY, Math.ceil(head.seq / VERIFY_RANGE_MIN_EVENTS));
    const size = Math.ceil(head.seq / rangeCount);
    const [signed, ...results] = await Promise.all([
      this.deps.checkpoints.verify(orgId, head.seq),
      ...Array.from({ length: rangeCount }, (_, index) => {
        const last = Math.min(head.seq, (index + 1) * size);
        return queries.verifyRange(index * size + 1, last, last === head.seq ? head.hash : null);
      }),
    ]);
    const broken = [...results, signed].flatMap((result) => (result.brokenAt === null ? [] : [result.brokenAt]));
    return {
      intact: broken.length === 0,
      count: results.reduce((sum, result) => sum + result.checked, 0),
      headHash: head.hash,
      brokenAtSeq: broken.length === 0 ? null : Math.min(...broken),
      checkpoints: signed.checked,
    };
  }

  async createExport(tenant: Tenant, filters: AuditFilters): Promise<AuditExportView> {
    const store = this.exports(tenant.orgId);
    const created = await store.create(serializeFilters(filters));
    try {
      await this.deps.jobs.add(auditExportJob, { orgId: tenant.orgId, exportId: created.id });
    } catch (error) {
      await store.fail(created.id);
      throw error;
    }
    return toExportView(created);
  }

  async getExport(tenant: Tenant, id: string): Promise<AuditExportView> {
    return toExportView(await this.findExport(tenant.orgId, id));
  }

  async download(tenant: Tenant, id: string): Promise<ExportDownload> {
    const record = await this.findExport(tenant.orgId, id);
    if (record.status !== 'completed')
      throw new ConflictError(`Audit export ${id} is ${record.status}; it can be downloaded once completed.`);
    const size = await this.files.size(id);
    if (size === null) throw new NotFoundError(`The file of audit export ${id} is no longer available; start a new export.`);
    return { filename: `audit-export-${id}.csv`, size, read: () => this.files.read(id) };
  }

  /**
   * The worker's side of an export: Postgres writes the CSV itself (`COPY ... TO STDOUT`, three
   * times the speed of rows re-serialized in Node) and the bytes stream to the file, so memory
   * stays flat whatever the size. Returns null when the export was already finished.
   */
  async runExport(orgId: string, exportId: string): Promise<{ rowCount: number; byteSize: number } | null> {
    const store = this.exports(orgId);
    const record = await store.start(exportId);
    if (!record) return null;
    const client = new pg.Client({ connectionString: this.options.databaseUrl });
    client.on('error', (error) => this.deps.logger.warn({ err: error, exportId }, 'audit export connection error'));
    await client.connect();
    const lines = new LineCounter();
    const reportProgress = () =>
      store
        .progress(exportId, Math.max(0, lines.count - 1))
        .catch((error: unknown) => this.deps.logger.warn({ err: error, exportId }, 'audit export progress not saved'));
    const progress = setInterval(reportProgress, EXPORT_PROGRESS_INTERVAL_MS);
    try {
      const copy = client.query(copyTo(auditExportCopySql(orgId, parseFilters(record.filters))));
      const byteSize = await this.files.write(exportId, copy, lines);
      await store.complete(exportId, copy.rowCount, byteSize);
      return { rowCount: copy.rowCount, byteSize };
    } finally {
      clearInterval(progress);
      await client.end();
    }
  }

  async failExport(orgId: string, exportId: string): Promise<void> {
    await this.exports(orgId).fail(exportId);
  }

  private async findExport(orgId: string, id: string): Promise<AuditExport> {
    const record = await this.exports(orgId).find(id);
    if (!record) throw new NotFoundError(`No audit export with id ${id} exists.`);
    return record;
  }
}

export function toEventView(row: AuditEventRow): AuditEventView {
  return {
    seq: Number(row.seq),
    prevHash: row.prevHash,
    hash: row.hash,
    type: row.type as AuditEventView['type'],
    actor: row.actor,
    data: JSON.parse(row.data) as Record<string, unknown>,
    createdAt: row.createdAt,
  };
}

/** The page as CSV: the columns of contract C6, `data` as the stored (compact, canonical) JSON. */
/**
 * The page as CSV: the columns of contract C6, `data` as the stored (compact, canonical) JSON.
 * Checkpoints, when asked for, are rows of type `audit.checkpoint` right after the event at their
 * seq: `createdAt` the signing time, `actor` empty, `data` the whole checkpoint, `hash` the signed hash.
 */
export function toCsv(rows: AuditEventRow[], checkpoints: Checkpoint[] = []): string {
  const bySeq = new Map(checkpoints.map((checkpoint) => [String(checkpoint.seq), checkpoint]));
  const records = rows.flatMap((row) => {
    const checkpoint = bySeq.get(String(row.seq));
    return checkpoint ? [row, checkpointRecord(checkpoint)] : [row];
  });
  return stringify(records, { header: true, columns: [...AUDIT_CSV_COLUMNS] });
}

function checkpointRecord(checkpoint: Checkpoint): AuditEventRow {
  return {
    seq: String(checkpoint.seq),
    createdAt: checkpoint.createdAt,
    type: CHECKPOINT_EVENT_TYPE,
    actor: '',
    data: canonicalJson(checkpoint),
    prevHash: '',
    hash: checkpoint.hash,
  };
}

function serializeFilters(filters: AuditFilters): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filters)
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => [key, value instanceof Date ? value.toISOString() : String(value)]),
  );
}

function parseFilters(stored: Record<string, string>): AuditFilters {
  const { from, to, ...rest } = stored;
  return { ...rest, ...(from ? { from: new Date(from) } : {}), ...(to ? { to: new Date(to) } : {}) };
}

function toExportView(record: AuditExport): AuditExportView {
  return {
    id: record.id,
    status: record.status,
    filters: record.filters,
    rowCount: Number(record.rowCount),
    createdAt: record.createdAt.toISOString(),
    completedAt: record.completedAt?.toISOString() ?? null,
    downloadPath: record.status === 'completed' ? `/v1/audit/exports/${record.id}/download` : null,
  };
}

/**
 * Counts newlines on their way to the file, for progress. Every CSV record is one line: no
 * exported field can hold a raw newline (`data` and `actor` are JSON, which escapes them).
 */
class LineCounter extends Transform {
  count = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    for (let index = chunk.indexOf(10); index !== -1; index = chunk.indexOf(10, index + 1)) this.count++;
    done(null, chunk);
  }
}
