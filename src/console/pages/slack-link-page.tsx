import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError } from '../../client/api-client';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useMember, useSession } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';

/**
 * /console/link-slack/:token, the link Slack sends a user it does not know: the signed-in member
 * sees which Slack account the link would link to them, and confirms. Opening it links nothing
 * (a preview in a chat client must not), and the token travels in request bodies, never in an
 * API URL.
 */
export function SlackLinkPage() {
  const { token = '' } = useParams();
  const { member } = useMember();
  const { signedIn } = useSession();
  const preview = useResource(() => api.session.previewSlackLink({ token }), [token]);
  const [linked, setLinked] = useState(false);
  const link = useAction(async () => {
    await api.session.linkSlack({ token });
    setLinked(true);
    // The session's member now shows Slack as linked (the settings page reads it).
    signedIn(await api.session.current());
  });

  const refusal = refusalOf(link.error ?? preview.error);
  return (
    <section aria-labelledby="slack-link-title" className="narrow">
      <h1 id="slack-link-title">Link your Slack account</h1>
      {preview.loading && <p role="status">Reading the link…</p>}
      {refusal ? (
        <p className="problem" role="alert">
          {refusal}
        </p>
      ) : (
        !preview.loading && !preview.data && <ProblemMessage error={preview.error} />
      )}
      {linked ? (
        <>
          <p role="status" className="notice">
            Linked. Go back to Slack and press Approve or Reject again: you now decide there as {member.email}.
          </p>
          <p>
            <Link to="/">Open the inbox</Link>
          </p>
        </>
      ) : (
        preview.data &&
        !refusal && (
          <form onSubmit={link.submit} className="stack">
            <dl className="facts">
              <dt>Slack user</dt>
              <dd>
                <code>{preview.data.userId}</code>
              </dd>
              <dt>Slack workspace</dt>
              <dd>
                <code>{preview.data.teamId}</code>
              </dd>
              <dt>Approval Gate member</dt>
              <dd>{member.email} (you)</dd>
              <dt>Link valid until</dt>
              <dd>{new Date(preview.data.expiresAt).toLocaleString()}</dd>
            </dl>
            {preview.data.linkedToYou ? (
              <p className="notice">This Slack account is already linked to you; there is nothing to do.</p>
            ) : (
              <>
                <p>
                  Once linked, what this Slack user presses in Slack counts as your decision. Link it only if the link was sent to you in
                  Slack.
                </p>
                <ProblemMessage error={link.error} />
                <button type="submit" className="primary" disabled={link.pending}>
                  Link this Slack account to me
                </button>
              </>
            )}
          </form>
        )
      )}
    </section>
  );
}

/** The refusals a person can act on, in words; anything else is shown as the API says it. */
function refusalOf(error: unknown): string | null {
  if (!(error instanceof ApiError)) return null;
  if (error.status === 410) {
    return 'This link is used, expired or unknown (a link works once, for 15 minutes). Press Approve or Reject in Slack again for a new one.';
  }
  if (error.status === 409) {
    return 'This Slack account is linked to another member of your organization. An admin can clear it on the Members page first.';
  }
  return null;
}
