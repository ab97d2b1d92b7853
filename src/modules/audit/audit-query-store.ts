import pg from 'pg';
import { pickColumns, selectList, type ColumnMap, type PgRow } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import type { AuditChainHead } from '../../generated/prisma/client.js';
import { AUDIT_CHAIN_HEAD_COLUMNS, AUDIT_EVENT_COLUMNS } from './audit-columns.js';
import type { AuditFilters } from './audit-schemas.js';

/** An event as exported (see docs/audit.md): `createdAt` and `data` are the exact text the hash covers. */
export interface AuditEventRow {
  seq: string;
  createdAt: string;
  type: string;
  actor: string;
  data: string;
  prevHash: string;
  hash: string;
}

/**
 * In the order of the CSV export's columns. `createdAt` by the same `to_char` as
 * `ag_audit_canonical`, so the exported time is the hashed one.
 */
const EXPORTED_COLUMNS = selectList({
  ...pickColumns(AUDIT_EVENT_COLUMNS, ['seq']),
  createdAt: `to_char(${AUDIT_EVENT_COLUMNS.createdAt} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
  ...pickColumns(AUDIT_EVENT_COLUMNS, ['type', 'actor', 'data', 'prevHash', 'hash']),
} satisfies ColumnMap<AuditEventRow>);

type ChainHeadRow = PgRow<Pick<AuditChainHead, 'seq' | 'hash'>>;
const HEAD_COLUMNS = selectList(pickColumns(AUDIT_CHAIN_HEAD_COLUMNS, ['seq', 'hash']));

/** A row of ag_verify_audit_range (see the migrations). */
interface VerifiedRange {
  checked: string;
  brokenAt: string | null;
}
export const VERIFIED_RANGE_COLUMNS = { checked: 'checked', brokenAt: 'broken_at' } as const satisfies ColumnMap<VerifiedRange>;

const VERIFY_RANGE_TIMEOUT_MS = 10 * 60_000;

/** Renders a value into the statement: a bind parameter, or a literal where none is allowed (COPY). */
type Bind = (value: string, type: 'uuid' | 'text' | 'timestamptz' | 'bigint') => string;

function bindParameters(values: unknown[]): Bind {
  return (value, type) => `$${values.push(value)}::${type}`;
}

const bindLiterals: Bind = (value, type) => `${pg.escapeLiteral(value)}::${type}`;

/**
 * The one WHERE clause of both the paged reads and the bulk export. Only the filters given appear,
 * so each query can use the index that leads with its filter and continues in seq order.
 */
function selection(orgId: string, filters: AuditFilters, bind: Bind): string {
  const conditions = [`org_id = ${bind(orgId, 'uuid')}`];
  if (filters.type) conditions.push(`type = ${bind(filters.type, 'text')}`);
  if (filters.action) conditions.push(`action = ${bind(filters.action, 'text')}`);
  if (filters.agent) conditions.push(`agent = ${bind(filters.agent, 'text')}`);
  if (filters.from) conditions.push(`created_at >= ${bind(filters.from.toISOString(), 'timestamptz')}`);
  if (filters.to) conditions.push(`created_at <= ${bind(filters.to.toISOString(), 'timestamptz')}`);
  return conditions.join(' AND ');
}

/** A bulk export's rows: a selection, after the seq a resumed run goes on from, up to the head fixed when it began. */
export interface ExportSelection {
  filters: AuditFilters;
  afterSeq: number;
  throughSeq: number;
}

/** A whole selection in seq order, with the exported columns; values are escaped literals. */
export function auditExportSelectSql(orgId: string, { filters, afterSeq, throughSeq }: ExportSelection): string {
  const range = `seq > ${bindLiterals(String(afterSeq), 'bigint')} AND seq <= ${bindLiterals(String(throughSeq), 'bigint')}`;
  return `SELECT ${EXPORTED_COLUMNS} FROM audit_events WHERE ${selection(orgId, filters, bindLiterals)} AND ${range} ORDER BY seq`;
}

/**
 * `COPY (...) TO STDOUT` of a selection as CSV, with the header of docs/audit.md unless the run goes on
 * from an earlier one. COPY takes no bind parameters, hence the literals (the values are validated
 * before they get here).
 */
export function auditExportCopySql(orgId: string, selection: ExportSelection, header: boolean): string {
  return `COPY (${auditExportSelectSql(orgId, selection)}) TO STDOUT WITH (FORMAT csv${header ? ', HEADER' : ''})`;
}

/** Reads of one organization's audit chain. */
export class AuditQueryStore {
  constructor(
    private readonly sql: Sql,
    private readonly orgId: string,
  ) {}

  /** Keyset page: events after `after` in seq order, never an OFFSET. */
  page(filters: AuditFilters, after: number, limit: number): Promise<AuditEventRow[]> {
    const values: unknown[] = [];
    const bind = bindParameters(values);
    const where = selection(this.orgId, filters, bind);
    const text = `SELECT ${EXPORTED_COLUMNS} FROM audit_events
      WHERE ${where} AND seq > $${values.push(after)} ORDER BY seq LIMIT $${values.push(limit)}`;
    // One prepared statement per combination of filters (at most 32), each with its own plan.
    const name = `audit-page-${Object.keys(filters)
      .filter((key) => filters[key as keyof AuditFilters] !== undefined)
      .sort()
      .join('-')}`;
    return this.sql.query<AuditEventRow>(name, text, values);
  }

  /** The chain head: the seq and hash of the newest event (0 and 64 zeros before the first). */
  async head(): Promise<{ seq: number; hash: string }> {
    const [head] = await this.sql.query<ChainHeadRow>('audit-head', `SELECT ${HEAD_COLUMNS} FROM audit_chain_heads WHERE org_id = $1`, [
      this.orgId,
    ]);
    if (!head) throw new Error(`organization ${this.orgId} has no audit chain head`);
    return { seq: Number(head.seq), hash: head.hash };
  }

  /** See `ag_verify_audit_range` in the migrations: the whole check runs in Postgres. */
  async verifyRange(first: number, last: number, lastHash: string | null): Promise<{ checked: number; brokenAt: number | null }> {
    const [row] = await this.sql.query<VerifiedRange>(
      'audit-verify-range',
      `SELECT ${selectList(VERIFIED_RANGE_COLUMNS)} FROM ag_verify_audit_range($1, $2, $3, $4)`,
      [this.orgId, first, last, lastHash],
      // A range of up to a few million events takes seconds, well past the pool's default.
      { timeoutMs: VERIFY_RANGE_TIMEOUT_MS },
    );
    return { checked: Number(row!.checked), brokenAt: row!.brokenAt === null ? null : Number(row!.brokenAt) };
  }
}
