import { Readable } from 'node:stream';
import type { Sql } from '../../data/database.js';
import type { AuditExportStorage } from './audit-export-storage.js';
import type { ExportPiece } from './audit-export-store.js';

/**
 * Exports stored in Postgres, in pieces of about 1 MiB of whole lines keyed by their byte offset
 * (`audit_export_chunks`, compressed with lz4 by TOAST). A piece is inserted by the statement
 * that saves the export's progress, so chunks and progress never disagree; a download reads one
 * chunk at a time through the pool, so memory stays flat whatever the size.
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

  append(_id: string, piece: ExportPiece, save: (bytes: Buffer | null) => Promise<void>): Promise<void> {
    return save(piece.bytes);
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
          const [chunk] = await sql.query<{ bytes: Buffer }>(
            'audit-export-chunk-read',
            'SELECT bytes FROM audit_export_chunks WHERE export_id = $1 AND byte_offset = $2',
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
