import type { ColumnMap } from '../../data/columns.js';
import type {
  AuditChainHead,
  AuditCheckpoint,
  AuditEvent,
  AuditExport,
  AuditExportChunk,
  AuditSigningKey,
  AuditTree,
  AuditTreeNode,
} from '../../generated/prisma/client.js';

// The audit tables' columns, read with raw SQL by several stores; see ColumnMap for why a new
// column cannot be left out.

export const AUDIT_EVENT_COLUMNS = {
  orgId: 'org_id',
  seq: 'seq',
  type: 'type',
  actor: 'actor',
  data: 'data',
  action: 'action',
  agent: 'agent',
  createdAt: 'created_at',
  prevHash: 'prev_hash',
  hash: 'hash',
} as const satisfies ColumnMap<AuditEvent>;

export const AUDIT_CHAIN_HEAD_COLUMNS = {
  orgId: 'org_id',
  seq: 'seq',
  hash: 'hash',
} as const satisfies ColumnMap<AuditChainHead>;

export const AUDIT_CHECKPOINT_COLUMNS = {
  orgId: 'org_id',
  seq: 'seq',
  hash: 'hash',
  createdAt: 'created_at',
  keyId: 'key_id',
  signature: 'signature',
  rootHash: 'root_hash',
  note: 'note',
} as const satisfies ColumnMap<AuditCheckpoint>;

export const AUDIT_SIGNING_KEY_COLUMNS = {
  keyId: 'key_id',
  publicKey: 'public_key',
  createdAt: 'created_at',
  retiredAt: 'retired_at',
} as const satisfies ColumnMap<AuditSigningKey>;

export const AUDIT_EXPORT_COLUMNS = {
  id: 'id',
  orgId: 'org_id',
  status: 'status',
  filters: 'filters',
  rowCount: 'row_count',
  byteSize: 'byte_size',
  throughSeq: 'through_seq',
  lastSeq: 'last_seq',
  writtenBytes: 'written_bytes',
  createdAt: 'created_at',
  startedAt: 'started_at',
  completedAt: 'completed_at',
} as const satisfies ColumnMap<AuditExport>;

export const AUDIT_EXPORT_CHUNK_COLUMNS = {
  exportId: 'export_id',
  byteOffset: 'byte_offset',
  bytes: 'bytes',
} as const satisfies ColumnMap<AuditExportChunk>;

export const AUDIT_TREE_COLUMNS = {
  orgId: 'org_id',
  size: 'size',
} as const satisfies ColumnMap<AuditTree>;

export const AUDIT_TREE_NODE_COLUMNS = {
  orgId: 'org_id',
  level: 'level',
  idx: 'idx',
  hash: 'hash',
} as const satisfies ColumnMap<AuditTreeNode>;
