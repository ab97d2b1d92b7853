import { useId } from 'react';
import type { ParsedPayload } from '../lib/json-edit';

/**
 * A payload edited as JSON text, saying as it is typed whether it is an object the API takes
 * and whether it differs from the payload it started from.
 */
export function JsonPayloadField({
  label,
  text,
  parsed,
  changed,
  changedHint,
  onChange,
}: {
  label: string;
  text: string;
  parsed: ParsedPayload;
  changed: boolean;
  changedHint: string;
  onChange(text: string): void;
}) {
  const statusId = useId();
  return (
    <>
      <label>
        {label}
        <textarea
          className="mono"
          rows={Math.min(24, Math.max(6, text.split('\n').length + 1))}
          spellCheck={false}
          value={text}
          aria-invalid={!parsed.ok}
          aria-describedby={statusId}
          onChange={(event) => onChange(event.target.value)}
        />
      </label>
      <p id={statusId} className={parsed.ok ? 'hint' : 'field-error'} role={parsed.ok ? undefined : 'alert'}>
        {parsed.ok ? (changed ? changedHint : 'Unchanged so far.') : parsed.message}
      </p>
    </>
  );
}
