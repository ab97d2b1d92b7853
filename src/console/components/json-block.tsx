import { prettyJson } from '../lib/format';

/** JSON pretty-printed, in a region named for screen readers. */
export function JsonBlock({ label, value }: { label: string; value: unknown }) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      {prettyJson(value)}
    </pre>
  );
}
