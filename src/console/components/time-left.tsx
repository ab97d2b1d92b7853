import { useEffect, useState } from 'react';
import { formatDuration } from '../lib/format';

/** How long until `expiresAt`, counting down every second. */
export function TimeLeft({ expiresAt }: { expiresAt: string | null }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!expiresAt) return;
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [expiresAt]);
  if (!expiresAt) return <span>—</span>;
  const left = new Date(expiresAt).getTime() - now;
  return <span className={left < 5 * 60_000 ? 'urgent' : undefined}>{left > 0 ? `${formatDuration(left)} left` : 'deadline passed'}</span>;
}
