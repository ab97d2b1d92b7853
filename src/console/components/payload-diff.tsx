import { useId } from 'react';
import { fieldChanges } from '../../modules/approvals/payload-changes';
import { jsonLineDiff, sortedKeys } from '../lib/json-edit';
import { LineDiff } from './line-diff';

/** A value as one table cell shows it: compact JSON, cut past a few lines' worth. */
function cellText(value: unknown): string {
  if (value === undefined) return '(absent)';
  const text = JSON.stringify(value);
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/**
 * What changed between two payloads: field by field (each changed field, nested ones as dotted
 * paths, with its value before and after), then line by line over the whole JSON, keys sorted.
 */
export function PayloadDiff({
  before,
  after,
  title,
  beforeLabel = 'Before',
  afterLabel = 'After',
}: {
  before: unknown;
  after: unknown;
  title: string;
  beforeLabel?: string;
  afterLabel?: string;
}) {
  const titleId = useId();
  const { changes, total } = fieldChanges(before, after);
  const lines = jsonLineDiff(sortedKeys(before), sortedKeys(after));
  return (
    <div className="stack payload-diff">
      <h3 id={titleId}>{title}</h3>
      {total === 0 ? (
        <p className="hint">The payloads are the same.</p>
      ) : (
        <div className="table-scroll" role="region" aria-labelledby={titleId} tabIndex={0}>
          <table className="field-changes">
            <caption className="hint">
              {total} changed field{total === 1 ? '' : 's'}
              {total > changes.length && `; the first ${changes.length} are listed`}
            </caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">{beforeLabel}</th>
                <th scope="col">{afterLabel}</th>
              </tr>
            </thead>
            <tbody>
              {changes.map((change) => (
                <tr key={change.path}>
                  <th scope="row" className="mono break">
                    {change.path}
                  </th>
                  <td className="mono break">
                    <del>{cellText(change.before)}</del>
                  </td>
                  <td className="mono break">
                    <ins>{cellText(change.after)}</ins>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <LineDiff lines={lines} label={`${title}, line by line`} />
    </div>
  );
}
