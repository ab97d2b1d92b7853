// Turning measurements into figures: percentiles, rounding, and plain-text tables.

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile, except that the median of an even count averages the middle two. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  if (p === 50 && sorted.length % 2 === 0) return (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function round(value: number, digits = 1): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** The spread of a set of durations (ms), to a tenth. */
export interface Stats {
  p50: number;
  p99: number;
  max: number;
  min: number;
}

export function stats(values: readonly number[]): Stats {
  if (values.length === 0) return { p50: NaN, p99: NaN, max: NaN, min: NaN };
  let max = -Infinity;
  let min = Infinity;
  for (const value of values) {
    if (value > max) max = value;
    if (value < min) min = value;
  }
  return { p50: round(percentile(values, 50)), p99: round(percentile(values, 99)), max: round(max), min: round(min) };
}

/** A plain-text table; numbers are right-aligned. */
export function formatTable(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column]!.length)));
  const line = (row: string[], isHeader: boolean) =>
    row
      .map((cell, column) =>
        isHeader || typeof rows[0]?.[column] !== 'number' ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [line(cells[0]!, true), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map((row) => line(row, false))].join('\n');
}

/** "MET" or "MISSED", as every benchmark prints its targets. */
export const verdict = (met: boolean): string => (met ? 'MET' : 'MISSED');
