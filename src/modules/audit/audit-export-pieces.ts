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

  const cut = (chunks: Buffer[], bytes: number): ExportPiece => {
    let lines = 0;
    for (const chunk of chunks) {
      for (let index = chunk.indexOf(NEWLINE); index !== -1; index = chunk.indexOf(NEWLINE, index + 1)) lines++;
    }
    if (headerPending && lines > 0) {
      lines--;
      headerPending = false;
    }
    if (lines > 0) lastSeq = Number(firstField(lastLine(chunks)));
    rowCount += lines;
    const piece = { offset, chunks, size: bytes, lastSeq, rowCount };
    offset += bytes;
    return piece;
  };

  for await (const chunk of source) {
    buffered.push(chunk);
    bufferedBytes += chunk.length;
    if (bufferedBytes < size) continue;
    const end = chunk.lastIndexOf(NEWLINE);
    if (end === -1) continue;
    const rest = chunk.subarray(end + 1);
    buffered[buffered.length - 1] = chunk.subarray(0, end + 1);
    yield cut(buffered, bufferedBytes - rest.length);
    buffered = rest.length > 0 ? [rest] : [];
    bufferedBytes = rest.length;
  }
  if (bufferedBytes > 0) yield cut(buffered, bufferedBytes);
}

/** The last line of chunks that end with a line break, without it; it may span chunks. */
function lastLine(chunks: Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (let index = chunks.length - 1; index >= 0; index--) {
    const chunk = chunks[index]!;
    const searchFrom = index === chunks.length - 1 ? chunk.length - 2 : chunk.length - 1;
    const start = searchFrom < 0 ? -1 : chunk.lastIndexOf(NEWLINE, searchFrom);
    parts.unshift(chunk.subarray(start + 1));
    if (start !== -1) break;
  }
  const line = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  return line.subarray(0, line.length - 1);
}

function firstField(line: Buffer): string {
  const comma = line.indexOf(COMMA);
  return line.subarray(0, comma === -1 ? line.length : comma).toString('latin1');
}
