import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Export files in one directory (EXPORT_DIR), shared by the worker that writes them and the web
 * processes that serve them: one machine, or a volume mounted by all. Chosen over Postgres large
 * objects, which deploy anywhere but were measured at a third of `\copy` speed (README, "Audit
 * export"). A file appears under its final name only once complete.
 */
export class AuditExportFiles {
  constructor(private readonly dir: string) {}

  private path(id: string): string {
    return path.join(this.dir, `${id}.csv`);
  }

  /** Streams `source` through `transforms` into the export's file; returns its size in bytes. */
  async write(id: string, source: Readable, ...transforms: Transform[]): Promise<number> {
    await mkdir(this.dir, { recursive: true });
    const partial = `${this.path(id)}.partial`;
    const file = createWriteStream(partial);
    try {
      await pipeline([source, ...transforms, file]);
      await rename(partial, this.path(id));
      return file.bytesWritten;
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
  }

  /** Size of the complete file, or null when it is not there (never written, or the directory was lost). */
  async size(id: string): Promise<number | null> {
    try {
      return (await stat(this.path(id))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  read(id: string): Readable {
    return createReadStream(this.path(id));
  }
}
