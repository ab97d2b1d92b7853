import { useState, type FormEvent, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { isoToLocalInput, localInputToIso } from '../lib/datetime-input';

/**
 * A filter form whose applied values live in the page's query string, so a filtered view can be
 * bookmarked and shared. `children` renders the fields from the draft and changes it.
 */
export function FilterForm({
  label,
  names,
  children,
}: {
  label: string;
  names: readonly string[];
  children(draft: Record<string, string>, change: (name: string, value: string) => void): ReactNode;
}) {
  const [params, setParams] = useSearchParams();
  const [draft, setDraft] = useState(() => Object.fromEntries(names.map((name) => [name, params.get(name) ?? ''])));
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setParams(Object.fromEntries(Object.entries(draft).filter(([, value]) => value !== '')));
  };
  const clear = () => {
    setDraft(Object.fromEntries(names.map((name) => [name, ''])));
    setParams({});
  };
  return (
    <form className="filters" aria-label={label} onSubmit={apply}>
      {children(draft, (name, value) => setDraft((current) => ({ ...current, [name]: value })))}
      <div className="actions">
        <button type="submit" className="primary">
          Apply filters
        </button>
        <button type="button" onClick={clear}>
          Clear filters
        </button>
      </div>
    </form>
  );
}

/** The applied filters: the query string's values for `names`, empty ones left out. */
export function useAppliedFilters(names: readonly string[]): Record<string, string> {
  const [params] = useSearchParams();
  return Object.fromEntries(names.flatMap((name) => (params.get(name) ? [[name, params.get(name)!]] : [])));
}

/** One filter: free text, or a time bound entered in local time and kept as an ISO 8601 instant. */
export function FilterField({
  label,
  name,
  draft,
  change,
  kind = 'text',
}: {
  label: string;
  name: string;
  draft: Record<string, string>;
  change(name: string, value: string): void;
  kind?: 'text' | 'time';
}) {
  const value = draft[name] ?? '';
  return (
    <label>
      {label}
      {kind === 'time' ? (
        <input
          type="datetime-local"
          value={isoToLocalInput(value || null)}
          onChange={(event) => change(name, localInputToIso(event.target.value) ?? '')}
        />
      ) : (
        <input value={value} onChange={(event) => change(name, event.target.value)} />
      )}
    </label>
  );
}
