import { formatTime } from '../lib/format';

/**
 * The state of something revocable (a key, a standing approval): when it was revoked, that it ran
 * out, or, to whoever may revoke it, the button that asks to.
 */
export function RevocationCell({
  revokedAt,
  ended = false,
  mayRevoke,
  label,
  onRevoke,
}: {
  revokedAt: string | null;
  ended?: boolean;
  mayRevoke: boolean;
  /** What the button revokes, for screen readers: the rows' buttons all read "Revoke". */
  label: string;
  onRevoke: () => void;
}) {
  if (revokedAt) return <>{`revoked ${formatTime(revokedAt)}`}</>;
  if (ended) return <>expired</>;
  if (!mayRevoke) return <>active</>;
  return (
    <button type="button" className="danger" aria-label={label} onClick={onRevoke}>
      Revoke
    </button>
  );
}
