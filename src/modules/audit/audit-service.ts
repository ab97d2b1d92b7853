import type { Readable } from 'node:stream';
import { stringify } from 'csv-stringify/sync';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { poolSql, type DataLayer, type Sql } from '../../data/database.js';
import type { Reads } from '../../data/read-replica.js';
import { ConflictError, GoneError, NotFoundError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { RetryLater } from '../../lib/job-retries.js';
import { principalKey, type Tenant } from '../orgs/tenant.js';
import { canonicalJson, CHECKPOINT_EVENT_TYPE } from './audit-events.js';
import { AuditExportChunks } from './audit-export-chunks.js';
import { AuditExportFiles } from './audit-export-files.js';
import { wholeLinePieces } from './audit-export-pieces.js';
import type { AuditExportStorage } from './audit-export-storage.js';
import type { CheckpointService } from './checkpoint-service.js';
import type { Checkpoint } from './checkpoint-signing.js';
import { AuditExportStore, expireAuditExports, type AuditExport } from './audit-export-store.js';
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

const HOUR_MS = 3_600_000;

export interface AuditOptions {
  /** A bulk export reads through its own connection: a long COPY should not hold one of the pool's. */
  databaseUrl: string;
  /** Exports as files in this directory; in Postgres when unset. */
  exportDir: string | undefined;
  /** How long a finished export can be downloaded before its storage is freed. */
  exportRetentionHours: number;
}

/** Where a created export waits for a worker to write it (the audit-export queue). */
export interface ExportQueue {
  add(job: { orgId: string; exportId: string }): Promise<void>;
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
  private readonly storage: AuditExportStorage;

  constructor(
    private readonly data: Pick<DataLayer, 'sql'> & { reads: Reads },
    private readonly deps: { exportQueue: ExportQueue; logger: Logger; checkpoints: CheckpointService },
    private readonly options: AuditOptions,
  ) {
    this.storage = options.exportDir ? new AuditExportFiles(options.exportDir) : new AuditExportChunks(data.sql);
  }

  private queries(orgId: string, sql: Sql = this.data.sql): AuditQueryStore {
    return new AuditQueryStore(sql, orgId);
  }

  private exports(orgId: string): AuditExportStore {
    return new AuditExportStore(this.data.sql, orgId);
  }

  async page(tenant: Tenant, query: AuditQuery): Promise<AuditPage> {
    const { after = 0, limit, verify, checkpoints: withCheckpoints, format: _format, ...filters } = query;
    // Audit reads may be a moment behind (a read replica), except for the caller's own recent writes.
    const sql = await this.data.reads.sqlFor(principalKey(tenant.principal));
    const [events, verification] = await Promise.all([
      this.queries(tenant.orgId, sql).page(filters, after, limit),
      verify ? this.verify(tenant.orgId, sql) : undefined,
    ]);
    const first = events[0];
    const last = events.at(-1);
    const checkpoints =
      withCheckpoints && first && last
        ? await this.deps.checkpoints.inRange(tenant.orgId, Number(first.seq), Number(last.seq), sql)
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
   * contradicts what was signed before (see docs/audit.md).
   */
  async verify(orgId: string, sql?: Sql): Promise<Verification> {
    // One source for the head, the ranges and the checkpoints, so that they agree with each other.
    const reading = sql ?? (await this.data.reads.sqlFor(null));
    const queries = this.queries(orgId, reading);
    const head = await queries.head();
    if (head.seq === 0) return { intact: true, count: 0, headHash: null, brokenAtSeq: null, checkpoints: 0 };
    const rangeCount = Math.min(VERIFY_CONCURRENCY, Math.ceil(head.seq / VERIFY_RANGE_MIN_EVENTS));
    const size = Math.ceil(head.seq / rangeCount);
    const [signed, ...results] = await Promise.all([
      this.deps.checkpoints.verify(orgId, head.seq, reading),
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
      await this.deps.exportQueue.add({ orgId: tenant.orgId, exportId: created.id });
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
    if (record.status === 'expired' || (record.completedAt && this.isPastRetention(record.completedAt)))
      throw new GoneError(
        `Audit export ${id} has expired (exports are kept ${this.options.exportRetentionHours} hours); start a new export.`,
      );
    if (record.status !== 'completed')
      throw new ConflictError(`Audit export ${id} is ${record.status}; it can be downloaded once completed.`);
    const size = Number(record.byteSize);
    const bytes = await this.storage.read(id, size);
    if (!bytes) throw new NotFoundError(`The file of audit export ${id} is no longer available; start a new export.`);
    return { filename: `audit-export-${id}.csv`, size, read: () => bytes };
  }

  private isPastRetention(completedAt: Date): boolean {
    return Date.now() - completedAt.getTime() > this.options.exportRetentionHours * HOUR_MS;
  }

  /**
   * The worker's side of an export: Postgres writes the CSV itself (`COPY ... TO STDOUT`, three
   * times the speed of rows re-serialized in Node) and the bytes go to storage in pieces of whole
   * lines, each saved with the seq of its last row, so memory stays flat whatever the size and a
   * run that was cut off (killed, or told to stop by `signal`) is taken up after the last saved
   * piece: the rows after its seq, up to the head fixed by the first run, give the same bytes an
   * uninterrupted run would have. Returns null when the export was already finished.
   */
  async runExport(orgId: string, exportId: string, signal?: AbortSignal): Promise<{ rowCount: number; byteSize: number } | null> {
    const store = this.exports(orgId);
    const started = await store.start(exportId);
    if (!started) return null;
    const { record, progress } = started;
    let { lastSeq, writtenBytes, rowCount } = progress;
    if ((await this.storage.keep(exportId, writtenBytes)) !== writtenBytes) {
      await store.restart(exportId);
      [lastSeq, writtenBytes, rowCount] = [0, 0, 0];
    }
    // COPY TO streams on the reading connection for the whole run: the pieces are written on another.
    const reading = await this.connectForReading(orgId, exportId, progress.throughSeq);
    const writing = await this.connectForExport(exportId, this.options.databaseUrl).catch(async (error: unknown) => {
      await reading.end();
      throw error;
    });
    try {
      const progressOnWriting = new AuditExportStore(poolSql(writing), orgId);
      const selection = { filters: parseFilters(record.filters), afterSeq: lastSeq, throughSeq: progress.throughSeq };
      const copy = reading.query(copyTo(auditExportCopySql(orgId, selection, writtenBytes === 0)));
      const from = { offset: writtenBytes, lastSeq, rowCount, header: writtenBytes === 0 };
      for await (const piece of wholeLinePieces(copy, from)) {
        await this.storage.append(exportId, piece, {
          connection: writing,
          saveProgress: () => progressOnWriting.saveProgress(exportId, piece),
        });
        rowCount = piece.rowCount;
        writtenBytes = piece.offset + piece.size;
        if (signal?.aborted) throw new RetryLater(0, `audit export ${exportId} stopped at byte ${writtenBytes} for a shutdown`);
      }
      await this.storage.complete(exportId);
      if (!(await store.complete(exportId, rowCount, writtenBytes))) {
        // Expired while it ran (stuck past the retention): what it wrote is not kept.
        await this.storage.remove(exportId);
        return null;
      }
      return { rowCount, byteSize: writtenBytes };
    } finally {
      await Promise.all([reading.end(), writing.end()]);
    }
  }

  /**
   * The connection an export's COPY reads on: the read replica while it is fresh and has the
   * export's last event already (the head was fixed on the primary), the primary otherwise. A
   * replica lost in the middle fails the run, whose retry takes up after the last saved piece.
   */
  private async connectForReading(orgId: string, exportId: string, throughSeq: number): Promise<pg.Client> {
    const replicaUrl = this.data.reads.replicaUrl();
    const replica = replicaUrl && throughSeq > 0 ? await this.connectForExport(exportId, replicaUrl).catch(() => null) : null;
    if (replica) {
      const { rows } = await replica
        .query<{ there: boolean }>('SELECT EXISTS (SELECT 1 FROM audit_events WHERE org_id = $1 AND seq = $2) AS there', [
          orgId,
          throughSeq,
        ])
        .catch(() => ({ rows: [] as { there: boolean }[] }));
      if (rows[0]?.there) return replica;
      await replica.end().catch(() => {});
    }
    return this.connectForExport(exportId, this.options.databaseUrl);
  }

  /** A bulk export's own connection: a long COPY should not hold one of the pool's. */
  private async connectForExport(exportId: string, connectionString: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString });
    client.on('error', (error) => this.deps.logger.warn({ err: error, exportId }, 'audit export connection error'));
    await client.connect();
    return client;
  }

  /** Marks the export failed and frees what it had written. */
  async failExport(orgId: string, exportId: string): Promise<void> {
    await this.exports(orgId).fail(exportId);
    await this.storage.remove(exportId);
  }

  /** Expires exports past the retention (finished, or stuck unfinished), at most `limit`, and frees their storage; returns how many. */
  async expireExports(limit: number): Promise<number> {
    const expired = await expireAuditExports(this.data.sql, this.options.exportRetentionHours, limit);
    for (const id of expired) await this.storage.remove(id);
    return expired.length;
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

/** The page as CSV: the columns of docs/audit.md, `data` as the stored (compact, canonical) JSON. */
/**
 * The page as CSV: the columns of docs/audit.md, `data` as the stored (compact, canonical) JSON.
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
