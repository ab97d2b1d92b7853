import type { DiffLine } from '../lib/json-edit';

/** A line-by-line change: added lines marked `+`, removed ones `-`, the rest as they were. */
export function LineDiff({ lines, label }: { lines: DiffLine[]; label: string }) {
  return (
    <pre className="diff" aria-label={label} tabIndex={0}>
      {lines.map((line, index) =>
        line.kind === 'added' ? (
          <ins key={index}>+ {line.text}</ins>
        ) : line.kind === 'removed' ? (
          <del key={index}>- {line.text}</del>
        ) : (
          <span key={index}>{`  ${line.text}`}</span>
        ),
      )}
    </pre>
  );
}
