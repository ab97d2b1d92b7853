import type { Decider, KeyOwner } from '../../client/api-types';

/** The reader's own zone, named ("Nov 29, 2026, 2:05:09 AM GMT+1"): `long` is the time style that shows it. */
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'long' });

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

/** Member ids to emails (`useMemberEmails`); a member no longer listed is named by id. */
type MemberEmails = ReadonlyMap<string, string>;
const NO_EMAILS: MemberEmails = new Map();

function describeMember(id: string, emails: MemberEmails): string {
  return emails.get(id) ?? `member ${id.slice(0, 8)}`;
}

export function describeDecider(decider: Decider | null, emails: MemberEmails = NO_EMAILS): string {
  if (!decider) return '—';
  if (decider.type === 'user') return decider.email;
  if (decider.type === 'api_key')
    return `API key ${decider.id.slice(0, 8)}${decider.owner ? ` (of ${describeKeyOwner(decider.owner, emails)})` : ''}`;
  return `policy ${decider.id}`;
}

/** Whose a key is: a member's or a service key's (a key without an owner is a service key). */
export function describeKeyOwner(owner: KeyOwner, emails: MemberEmails = NO_EMAILS): string {
  return owner.type === 'user' ? describeMember(owner.id, emails) : `service key ${owner.id.slice(0, 8)}`;
}

/** The audit chain's actor string (`{"type":"user","id":"…"}`) in words. */
export function describeActor(actor: string, emails: MemberEmails = NO_EMAILS): string {
  try {
    return describePrincipal(JSON.parse(actor) as { type: string; id: string }, emails);
  } catch {
    return actor;
  }
}

/**
 * Who did something (an audit actor, who stored a policy version): a member by email (as the
 * members list has it now, else as it was recorded), a key by the start of its id.
 */
export function describePrincipal({ type, id, email }: { type: string; id: string; email?: string }, emails: MemberEmails = NO_EMAILS) {
  if (type === 'user') return emails.get(id) ?? email ?? describeMember(id, emails);
  if (type === 'api_key') return `API key ${id.slice(0, 8)}`;
  return `${type} ${id}`;
}

/**
 * "1 approving vote settles it", "2 approving votes settle it", or with stages "2 approving votes in
 * stage 1 complete it"; null once the request is settled (approved, rejected, expired, escalated),
 * where a quorum no longer decides anything.
 */
export function quorumText({ status, quorum, stage }: { status: string; quorum: number; stage: { index: number } | null }): string | null {
  if (status !== 'pending') return null;
  const votes = quorum === 1 ? '1 approving vote' : `${quorum} approving votes`;
  if (stage) return `${votes} in stage ${stage.index} ${quorum === 1 ? 'completes' : 'complete'} it`;
  return `${votes} ${quorum === 1 ? 'settles' : 'settle'} it`;
}

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** "1 request", "1,200 requests". */
export function countOf(count: number, noun: string): string {
  return `${count.toLocaleString()} ${noun}${count === 1 ? '' : 's'}`;
}
