import type { Decider, KeyOwner } from '../../client/api-types';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : '—';
}

/** "4 min 12 s", "2 h 5 min", "3 d 4 h": the two largest units of a duration. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const units: [string, number][] = [
    ['d', Math.floor(seconds / 86_400)],
    ['h', Math.floor(seconds / 3600) % 24],
    ['min', Math.floor(seconds / 60) % 60],
    ['s', seconds % 60],
  ];
  const first = units.findIndex(([, value]) => value > 0);
  if (first === -1) return '0 s';
  return units
    .slice(first, first + 2)
    .filter(([, value]) => value > 0)
    .map(([unit, value]) => `${value} ${unit}`)
    .join(' ');
}

export function describeDecider(decider: Decider | null): string {
  if (!decider) return '—';
  if (decider.type === 'user') return decider.email;
  if (decider.type === 'api_key')
    return `API key ${decider.id.slice(0, 8)}${decider.owner ? ` (of ${describeKeyOwner(decider.owner)})` : ''}`;
  return `policy ${decider.id}`;
}

/** Whose a key is: a member's or a service key's (a key without an owner is a service key). */
export function describeKeyOwner(owner: KeyOwner): string {
  return owner.type === 'user' ? `member ${owner.id.slice(0, 8)}` : `service key ${owner.id.slice(0, 8)}`;
}

/** The audit chain's actor string (`{"type":"user","id":"…"}`) in words. */
export function describeActor(actor: string): string {
  try {
    const { type, id } = JSON.parse(actor) as { type: string; id: string };
    if (type === 'user') return `member ${id.slice(0, 8)}`;
    if (type === 'api_key') return `API key ${id.slice(0, 8)}`;
    return `${type} ${id}`;
  } catch {
    return actor;
  }
}

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
