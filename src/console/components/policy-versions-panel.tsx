import { useState } from 'react';
import type { PolicyVersionView } from '../../client/api-types';
import { api, unlessMissing } from '../api';
import { useMemberEmails } from '../hooks/member-emails';
import { usePages } from '../hooks/use-pages';
import { describePrincipal, formatTime } from '../lib/format';
import { jsonLineDiff, sortedKeys } from '../lib/json-edit';
import { documentOfView } from '../lib/policy-draft';
import { DataTable } from './data-table';
import { LineDiff } from './line-diff';
import { ListEnd } from './list-end';
import { ProblemMessage } from './problem-message';

/**
 * Every version the key has had, newest first (kept after a DELETE), who stored each, and what
 * changed between any two of those listed, line by line over their documents.
 */
export function PolicyVersionsPanel({ policyKey, current }: { policyKey: string; current: number | null }) {
  const emails = useMemberEmails();
  const versions = usePages(
    async (cursor) => {
      // A key never stored has no versions (404), which is no failure.
      const page = await unlessMissing(api.policies.versions(policyKey, cursor ? { cursor } : {}));
      return { items: page?.versions ?? [], next: page?.nextCursor ?? null };
    },
    [policyKey, current],
  );
  const [chosen, setChosen] = useState<{ older: number; newer: number } | null>(null);
  const find = (version: number | undefined) => versions.items.find((item) => item.version === version);
  // Until a pair is chosen, the latest change: the newest version against the one before it.
  const older = find(chosen?.older) ?? versions.items[1];
  const newer = find(chosen?.newer) ?? versions.items[0];

  return (
    <section className="panel stack" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <ProblemMessage error={versions.error} />
      <DataTable label="Versions" columns={['Version', 'Stored', 'By', 'Changes']}>
        {versions.items.map((version, index) => (
          <tr key={version.version}>
            <td>
              {version.version}
              {version.version === current && ' (current)'}
            </td>
            <td>{formatTime(version.createdAt)}</td>
            <td className="break">{describePrincipal(version.changedBy, emails)}</td>
            <td>
              {versions.items[index + 1] && (
                <button
                  type="button"
                  aria-label={`Show the changes in version ${version.version}`}
                  onClick={() => setChosen({ older: versions.items[index + 1]!.version, newer: version.version })}
                >
                  Show
                </button>
              )}
            </td>
          </tr>
        ))}
      </DataTable>
      <ListEnd list={versions} empty="No version yet: saving the policy stores version 1." />
      {older && newer && (
        <>
          <div className="actions">
            <VersionSelect
              label="Compare version"
              versions={versions.items}
              value={older.version}
              onChange={(version) => setChosen({ older: version, newer: newer.version })}
            />
            <VersionSelect
              label="with version"
              versions={versions.items}
              value={newer.version}
              onChange={(version) => setChosen({ older: older.version, newer: version })}
            />
          </div>
          <VersionDiff older={older} newer={newer} />
        </>
      )}
    </section>
  );
}

function VersionSelect({
  label,
  versions,
  value,
  onChange,
}: {
  label: string;
  versions: PolicyVersionView[];
  value: number;
  onChange(version: number): void;
}) {
  return (
    <label className="inline">
      {label}
      <select value={value} onChange={(event) => onChange(Number(event.target.value))}>
        {versions.map((version) => (
          <option key={version.version} value={version.version}>
            {version.version}
          </option>
        ))}
      </select>
    </label>
  );
}

function VersionDiff({ older, newer }: { older: PolicyVersionView; newer: PolicyVersionView }) {
  const lines = jsonLineDiff(sortedKeys(documentOfView(older)), sortedKeys(documentOfView(newer)));
  const title = `From version ${older.version} to version ${newer.version}`;
  return (
    <div className="stack">
      <h3>{title}</h3>
      {lines.every((line) => line.kind === 'same') && <p className="hint">The two versions store the same document.</p>}
      <LineDiff lines={lines} label={`${title}, line by line`} />
    </div>
  );
}
