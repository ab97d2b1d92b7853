import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type pg from 'pg';
import { pickColumns, selectList, type ColumnMap } from '../../data/columns.js';
import type { Sql } from '../../data/database.js';
import { AUDIT_EXPORT_CHUNK_COLUMNS } from './audit-columns.js';
import { EXPORT_PIECE_BYTES } from './audit-export-pieces.js';
import type { AuditExportStorage, PieceWriter } from './audit-export-storage.js';
import type { ExportPiece } from './audit-export-store.js';

/** `COPY ... (FORMAT binary)` framing: the file header, and the end-of-data trailer. */
const COPY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const COPY_TRAILER = Buffer.from([0xff, 0xff]);

/** The binary COPY tuple of a chunk up to its bytes: field count, export id (uuid), byte offset (int8), bytes' length. */
function chunkTupleHead(id: string, piece: ExportPiece): Buffer {
  const head = Buffer.alloc(2 + 4 + 16 + 4 + 8 + 4);
  let at = head.writeInt16BE(3, 0);
  at = head.writeInt32BE(16, at);
  at += head.write(id.replaceAll('-', ''), at, 'hex');
  at = head.writeInt32BE(8, at);
  at = head.writeBigInt64BE(BigInt(piece.offset), at);
  head.writeInt32BE(piece.size, at);
  return head;
}

/**
 * The piece's bytes in one buffer, for one CopyData message: written chunk by chunk, each a message
 * and two socket writes, a piece took a fifth longer to store. The buffer is the export's own (one
 * per writing connection, which appends one piece at a time) and used again for every piece, since
 * a new one per piece is a mebibyte of garbage outside V8's heap each time, which the worker's
 * peak memory counts until a collection.
 */
const joinBuffers = new WeakMap<pg.ClientBase, Buffer>();
function joined(connection: pg.ClientBase, piece: ExportPiece): Buffer {
  let buffer = joinBuffers.get(connection);
  if (!buffer || buffer.length < piece.size) {
    buffer = Buffer.allocUnsafe(Math.max(piece.size, EXPORT_PIECE_BYTES * 2));
    joinBuffers.set(connection, buffer);
  }
  let at = 0;
  for (const chunk of piece.chunks) at += chunk.copy(buffer, at);
  return buffer.subarray(0, at);
}

/** A chunk as read back: its bytes, which `pg` hands over as a Buffer. */
type ChunkRow = { bytes: Buffer };
const CHUNK_COLUMNS = selectList(pickColumns(AUDIT_EXPORT_CHUNK_COLUMNS, ['bytes']) satisfies ColumnMap<ChunkRow>);

/**
 * Exports stored in Postgres, in pieces of about 1 MiB of whole lines keyed by their byte offset
 * (`audit_export_chunks`, compressed with lz4 by TOAST). A piece goes in by a binary `COPY FROM
 * STDIN` in the transaction that saves the export's progress, so chunks and progress never
 * disagree. COPY streams the piece's own bytes to the socket: as a bind parameter, `pg` would copy
 * each piece into a protocol buffer of its own, garbage outside V8's heap that piled up for a
 * while before a collection freed it. A download reads one chunk at a time through the pool, so
 * memory stays flat whatever the size.
 */
export class AuditExportChunks implements AuditExportStorage {
  constructor(private readonly sql: Sql) {}

  async keep(id: string, recorded: number): Promise<number> {
    // Chunks commit with the progress: none can lie past it.
    await this.sql.query('audit-export-chunks-trim', 'DELETE FROM audit_export_chunks WHERE export_id = $1 AND byte_offset >= $2', [
      id,
      recorded,
    ]);
    return recorded;
  }

  async append(id: string, piece: ExportPiece, writer: PieceWriter): Promise<void> {
    const { connection } = writer;
    await connection.query('BEGIN');
    try {
      await writer.saveProgress();
      const copy = connection.query(copyFrom('COPY audit_export_chunks (export_id, byte_offset, bytes) FROM STDIN (FORMAT binary)'));
      copy.write(COPY_HEADER);
      copy.write(chunkTupleHead(id, piece));
      copy.write(joined(connection, piece));
      copy.end(COPY_TRAILER);
      await finished(copy);
      await connection.query('COMMIT');
    } catch (error) {
      await connection.query('ROLLBACK').catch(() => {});
      throw error;
    }
  }

  /** The last chunk committed with the progress: nothing is left to do. */
  async complete(): Promise<void> {}

  async read(id: string, size: number): Promise<Readable | null> {
    const [first] = await this.sql.query<{ present: boolean }>(
      'audit-export-chunks-present',
      'SELECT EXISTS (SELECT FROM audit_export_chunks WHERE export_id = $1) AS present',
      [id],
    );
    if (!first?.present && size > 0) return null;
    const sql = this.sql;
    return Readable.from(
      (async function* chunks() {
        for (let offset = 0; offset < size;) {
          const [chunk] = await sql.query<ChunkRow>(
            'audit-export-chunk-read',
            `SELECT ${CHUNK_COLUMNS} FROM audit_export_chunks WHERE export_id = $1 AND byte_offset = $2`,
            [id, offset],
          );
          if (!chunk) throw new Error(`audit export ${id} has no chunk at byte ${offset}`);
          yield chunk.bytes;
          offset += chunk.bytes.length;
        }
      })(),
      { objectMode: false },
    );
  }

  /** The chunks are deleted by the statement that fails or expires the export. */
  async remove(): Promise<void> {}
}
