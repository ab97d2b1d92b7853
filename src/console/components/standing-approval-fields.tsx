import type { ApprovalView, DecisionInput } from '../../client/api-types';

/** The durations offered for a standing approval, up to the policy's maximum (which is offered too). */
const DURATIONS = [
  { seconds: 900, label: '15 minutes' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 4 * 3600, label: '4 hours' },
  { seconds: 24 * 3600, label: '24 hours' },
];

export type StandingChoice = NonNullable<DecisionInput['standing']> | null;

function durationLabel(seconds: number): string {
  return DURATIONS.find((duration) => duration.seconds === seconds)?.label ?? `${Math.round(seconds / 60)} minutes`;
}

/**
 * "Approve this, and the same again for a while" (docs/policies.md#standing-approvals): off by
 * default; on, a duration up to the policy's maximum and what "the same" means, the whole payload
 * or the top-level fields the reviewer picks.
 */
export function StandingApprovalFields({
  approval,
  maxSeconds,
  value,
  onChange,
}: {
  approval: ApprovalView;
  maxSeconds: number;
  value: StandingChoice;
  onChange(value: StandingChoice): void;
}) {
  const offered = [...new Set([...DURATIONS.map((duration) => duration.seconds).filter((seconds) => seconds < maxSeconds), maxSeconds])];
  const fields = Object.keys(approval.payload);
  const forSeconds = value?.forSeconds ?? offered[0]!;
  return (
    <fieldset className="stack">
      <legend>Approve the same again</legend>
      <label className="inline">
        <input type="checkbox" checked={value !== null} onChange={(event) => onChange(event.target.checked ? { forSeconds } : null)} />
        Also approve identical requests from {approval.agent ?? 'this requester'} for
      </label>
      <label className="inline">
        Duration
        <select
          value={forSeconds}
          disabled={value === null}
          onChange={(event) => value && onChange({ ...value, forSeconds: Number(event.target.value) })}
        >
          {offered.map((seconds) => (
            <option key={seconds} value={seconds}>
              {durationLabel(seconds)}
            </option>
          ))}
        </select>
      </label>
      {value !== null && fields.length > 0 && (
        <fieldset className="stack">
          <legend>Identical means</legend>
          <label className="inline">
            <input type="radio" name="standing-match" checked={!value.fields} onChange={() => onChange({ forSeconds })} />
            the same payload, every field
          </label>
          <label className="inline">
            <input
              type="radio"
              name="standing-match"
              checked={Boolean(value.fields)}
              onChange={() => onChange({ forSeconds, fields: [fields[0]!] })}
            />
            the same values of these fields:
          </label>
          {value.fields && (
            <div>
              {fields.map((field) => (
                <label key={field} className="inline">
                  <input
                    type="checkbox"
                    checked={value.fields!.includes(field)}
                    onChange={(event) => {
                      const picked = event.target.checked ? [...value.fields!, field] : value.fields!.filter((name) => name !== field);
                      if (picked.length > 0) onChange({ forSeconds, fields: picked });
                    }}
                  />
                  <span className="mono">{field}</span>
                </label>
              ))}
            </div>
          )}
        </fieldset>
      )}
      <p className="hint">
        Same policy, action, agent and requesting key; never beyond what you may decide yourself. Revoke it any time under Standing
        approvals.
      </p>
    </fieldset>
  );
}
