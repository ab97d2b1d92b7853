import type { ExportPiece } from './audit-export-store.js';

/** About this many bytes per stored piece: few rows to save per second, little memory per export. */
export const EXPORT_PIECE_BYTES = 1024 * 1024;

const NEWLINE = 10;
const COMMA = 44;

/**
 * Cuts `COPY ... TO STDOUT (FORMAT csv)` output into pieces of whole lines of at least `size`
 * bytes (the last one shorter), each with the progress it brings: the seq of its last row (the
 * first field of every record; a record is one line, since `data` and `actor` are JSON, which
 * escapes line breaks) and the rows written through it. `from` is where the export stands: a
 * resumed export's COPY starts after `from.lastSeq` and has no header.
 */
export async function* wholeLinePieces(
  source: AsyncIterable<Buffer>,
  from: { offset: number; lastSeq: number; rowCount: number; header: boolean },
  size = EXPORT_PIECE_BYTES,
): AsyncGenerator<ExportPiece> {
  let { offset, lastSeq, rowCount } = from;
  let headerPending = from.header;
  let buffered: Buffer[] = [];
  let bufferedBytes = 0;

  const cut = (bytes: Buffer): ExportPiece => {
    let lines = 0;
    for (let index = bytes.indexOf(NEWLINE); index !== -1; index = bytes.indexOf(NEWLINE, index + 1)) lines++;
    if (headerPending && lines > 0) {
      lines--;
      headerPending = false;
    }
    if (lines > 0) {
      const start = bytes.lastIndexOf(NEWLINE, bytes.length - 2) + 1;
      lastSeq = Number(bytes.subarray(start, bytes.indexOf(COMMA, start)).toString('latin1'));
    }
    rowCount += lines;
    const piece = { offset, bytes, lastSeq, rowCount };
    offset += bytes.length;
    return piece;
  };

  for await (const chunk of source) {
    buffered.push(chunk);
    bufferedBytes += chunk.length;
    if (bufferedBytes < size) continue;
    const end = chunk.lastIndexOf(NEWLINE);
    if (end === -1) continue;
    const all = Buffer.concat(buffered, bufferedBytes);
    const cutAt = bufferedBytes - chunk.length + end + 1;
    yield cut(all.subarray(0, cutAt));
    const rest = all.subarray(cutAt);
    buffered = rest.length > 0 ? [Buffer.from(rest)] : [];
    bufferedBytes = rest.length;
  }
  if (bufferedBytes > 0) yield cut(Buffer.concat(buffered, bufferedBytes));
}
