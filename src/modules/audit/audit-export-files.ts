import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { AuditExportStorage, PieceWriter } from './audit-export-storage.js';
import type { ExportPiece } from './audit-export-store.js';

/**
 * Exports as files in one directory (EXPORT_DIR), shared by the worker that writes them and the
 * web processes that serve them: one machine, or a volume mounted by all. A file appears under its
 * final name only once complete; until then `<id>.csv.partial` holds the pieces written so far.
 */
export class AuditExportFiles implements AuditExportStorage {
  constructor(private readonly dir: string) {}

  private path(id: string): string {
    return path.join(this.dir, `${id}.csv`);
  }

  private partial(id: string): string {
    return `${this.path(id)}.partial`;
  }

  async keep(id: string, recorded: number): Promise<number> {
    await mkdir(this.dir, { recursive: true });
    const size = await sizeOf(this.partial(id));
    // Bytes past the recorded progress were written by a run that died before saving it.
    const kept = size !== null && size >= recorded ? recorded : 0;
    if (size !== null) await truncate(this.partial(id), kept);
    return kept;
  }

  /** The piece is written before its progress is saved: bytes past the progress are dropped by `keep`. */
  async append(id: string, piece: ExportPiece, writer: PieceWriter): Promise<void> {
    const file = await open(this.partial(id), piece.offset === 0 ? 'w' : 'r+');
    try {
      await file.writev(piece.chunks, piece.offset);
    } finally {
      await file.close();
    }
    await writer.saveProgress();
  }

  /**
   * The file's bytes reach the disk before it takes its final name, and the rename before the
   * export is marked completed: after a power loss a completed export is whole, never a name
   * pointing at a short or empty file.
   */
  async complete(id: string): Promise<void> {
    await syncPath(this.partial(id), 'r+');
    await rename(this.partial(id), this.path(id));
    await syncPath(this.dir, 'r');
  }

  async read(id: string): Promise<Readable | null> {
    return (await sizeOf(this.path(id))) === null ? null : createReadStream(this.path(id));
  }

  async remove(id: string): Promise<void> {
    await Promise.all([rm(this.path(id), { force: true }), rm(this.partial(id), { force: true })]);
  }
}

/** fsync of a file, or of a directory (its entries: a rename). */
async function syncPath(target: string, flags: 'r' | 'r+'): Promise<void> {
  const handle = await open(target, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function sizeOf(file: string): Promise<number | null> {
  try {
    return (await stat(file)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
