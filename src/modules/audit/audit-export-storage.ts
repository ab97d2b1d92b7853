import type { Readable } from 'node:stream';
import type pg from 'pg';
import type { ExportPiece } from './audit-export-store.js';

/**
 * Where the bytes of bulk exports live. Postgres by default (`audit_export_chunks`), so that any
 * web process serves what any worker wrote, with no shared disk; a directory (EXPORT_DIR) when
 * chosen. Either way the export's progress (last seq, bytes written) is saved in `audit_exports`
 * with each piece, which is what lets an interrupted export go on where it stopped.
 */
export interface AuditExportStorage {
  /**
   * Before a run: how many of the `recorded` bytes of an earlier run are still there to build on,
   * anything past them dropped; 0 to start over.
   */
  keep(id: string, recorded: number): Promise<number>;
  /** Stores a piece and saves the progress it brings with `writer`. */
  append(id: string, piece: ExportPiece, writer: PieceWriter): Promise<void>;
  /** The export is complete: make it readable. */
  complete(id: string): Promise<void>;
  /** The complete export's bytes; null when they are no longer there. */
  read(id: string, size: number): Promise<Readable | null>;
  /** Frees what storage outside the database holds (chunks go with their statement). */
  remove(id: string): Promise<void>;
}

/** The export's own connection for writing, and how to save a piece's progress on it. */
export interface PieceWriter {
  /** Nothing else runs on it while a piece is appended: storage may open a transaction there. */
  connection: pg.ClientBase;
  /** Saves the progress the piece brings, on `connection`; throws when another run took the export over. */
  saveProgress(): Promise<void>;
}
