import type { AdminNotice } from '../orgs/admin-notices.js';

/** The mail that invites a member: plain text, rendered from rows, no I/O. */
export function inviteNotice(
  org: { name: string },
  member: { email: string; role: string; name: string | null },
  inviteUrl: string,
): AdminNotice {
  return {
    subject: `You are invited to review for ${org.name} on Approval Gate`,
    text: [
      `Hello${member.name ? ` ${member.name}` : ''},`,
      '',
      `You were added to ${org.name} on Approval Gate as ${member.role === 'admin' ? 'an admin' : `a ${member.role}`}.`,
      'Open this link to choose a password and sign in (it works once, for 7 days):',
      '',
      `  ${inviteUrl}`,
      '',
      'If you did not expect this, you can ignore this mail.',
    ].join('\n'),
  };
}
