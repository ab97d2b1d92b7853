import { describe, expect, it } from 'vitest';
import { wholeLinePieces } from '../src/modules/audit/audit-export-pieces.js';

async function* chunksOf(parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part, 'latin1');
}

async function piecesOf(parts: string[], size: number, header = true) {
  const pieces = [];
  for await (const piece of wholeLinePieces(chunksOf(parts), { offset: 0, lastSeq: 0, rowCount: 0, header }, size)) {
    pieces.push({ ...piece, text: Buffer.concat(piece.chunks).toString('latin1') });
  }
  return pieces;
}

describe('wholeLinePieces', () => {
  const csv = 'seq,type\n1,a\n22,b\n333,c\n4444,d\n';

  it('cuts the stream into whole lines, however it was split, with the seq and rows each piece brings', async () => {
    for (const split of [[csv], csv.split(''), ['seq,type\n1,a\n2', '2,b\n333,c\n', '4', '444,d', '\n']]) {
      const pieces = await piecesOf(split, 12);
      expect(pieces.map((piece) => piece.text).join('')).toBe(csv);
      for (const piece of pieces) {
        expect(piece.text.endsWith('\n')).toBe(true);
        expect(piece.size).toBe(piece.text.length);
      }
      expect(pieces.map((piece) => piece.offset)).toEqual(
        pieces.map((_, index) => pieces.slice(0, index).reduce((sum, p) => sum + p.size, 0)),
      );
      const last = pieces.at(-1)!;
      expect([last.lastSeq, last.rowCount]).toEqual([4444, 4]);
      for (const piece of pieces) {
        const lines = piece.text.trimEnd().split('\n');
        const row = lines.at(-1)!;
        if (row !== 'seq,type') expect(piece.lastSeq).toBe(Number(row.split(',')[0]));
      }
    }
  });

  it('counts no header on a resumed export, and keeps the seq of a piece holding only the header', async () => {
    expect((await piecesOf(['5,e\n66,f\n'], 1, false)).map((piece) => [piece.lastSeq, piece.rowCount])).toEqual([[66, 2]]);
    expect((await piecesOf(['seq,type\n', '7,g\n'], 1)).map((piece) => [piece.lastSeq, piece.rowCount])).toEqual([
      [0, 0],
      [7, 1],
    ]);
  });
});
