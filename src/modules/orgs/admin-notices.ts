/** The emails an organization's admins receive: plain text, rendered from rows, no I/O. */
export interface AdminNotice {
  subject: string;
  text: string;
}

export function orphanedApprovalNotice(
  org: { name: string },
  approval: { id: string; action: string; policyKey: string; expiresAt: Date | null },
): AdminNotice {
  const waits = approval.expiresAt ? `until it expires at ${approval.expiresAt.toISOString()}` : 'for a human';
  return {
    subject: `[Approval Gate] "${approval.action}" is waiting: no policy "${approval.policyKey}"`,
    text: [
      `An agent asked to perform "${approval.action}" under the policy key "${approval.policyKey}", but ${org.name} has no policy with that key.`,
      '',
      `  Action:             ${approval.action}`,
      `  Missing policy key: ${approval.policyKey}`,
      `  Approval id:        ${approval.id}`,
      '',
      `The request is pending and waits ${waits}. What to do:`,
      `  - create the policy with PUT /v1/policies/${approval.policyKey}, so that later requests with this key are decided by its rules;`,
      `  - and decide this request with POST /v1/approvals/${approval.id}/decision ({"verdict": "approved"} or {"verdict": "rejected"}):`,
      '    creating the policy does not decide requests already waiting.',
    ].join('\n'),
  };
}

export function endpointDisabledNotice(org: { name: string }, endpoint: { id: string; url: string }, reason: string): AdminNotice {
  return {
    subject: `[Approval Gate] Webhook endpoint disabled: ${endpoint.url}`,
    text: [
      `A webhook endpoint of ${org.name} was disabled and receives no more events.`,
      '',
      `  Endpoint id: ${endpoint.id}`,
      `  URL:         ${endpoint.url}`,
      `  Reason:      ${reason}`,
      '',
      `Once the receiver works again, re-enable it with PATCH /v1/webhooks/${endpoint.id} ({"enabled": true}).`,
      `Its failed deliveries are listed at GET /v1/webhooks/${endpoint.id}/deliveries and can be sent again with`,
      `POST /v1/webhooks/${endpoint.id}/deliveries/<deliveryId>/redeliver.`,
    ].join('\n'),
  };
}
