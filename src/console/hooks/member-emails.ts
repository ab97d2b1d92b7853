import { useMemo } from 'react';
import { api } from '../api';
import { useResource } from './use-resource';

/**
 * Member ids to emails, from the members list every role may read, so that pages which get only an
 * id (audit actors, key owners) name people as the rest of the console does: by email.
 */
export function useMemberEmails(): ReadonlyMap<string, string> {
  const members = useResource(() => api.members.list(), []);
  return useMemo(() => new Map((members.data?.members ?? []).map((member) => [member.id, member.email])), [members.data]);
}
