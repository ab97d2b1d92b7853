import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api } from '../api';
import { ProblemMessage } from '../components/problem-message';
import { useMember, useSession } from '../hooks/session';
import { useAction } from '../hooks/use-resource';

/**
 * /console/link-teams/:token, the link a Teams card shows a user it does not know: the signed-in
 * member confirms, and their Entra identity is linked to them. Opening it links nothing.
 */
export function TeamsLinkPage() {
  const { token = '' } = useParams();
  const { member } = useMember();
  const { signedIn } = useSession();
  const [linked, setLinked] = useState(false);
  const link = useAction(async () => {
    await api.session.linkTeams({ token });
    setLinked(true);
    signedIn(await api.session.current());
  });
  return (
    <section aria-labelledby="teams-link-title" className="narrow">
      <h1 id="teams-link-title">Link your Teams account</h1>
      {linked ? (
        <>
          <p role="status" className="notice">
            Linked. Go back to Teams and press the card's button again: you now decide there as {member.email}.
          </p>
          <p>
            <Link to="/">Open the inbox</Link>
          </p>
        </>
      ) : (
        <form onSubmit={link.submit} className="stack">
          <p>
            Once linked, what the Teams user who got this link presses on a card counts as your decision ({member.email}). Link it only if
            Teams showed the link to you.
          </p>
          <ProblemMessage error={link.error} />
          <button type="submit" className="primary" disabled={link.pending}>
            Link this Teams account to me
          </button>
        </form>
      )}
    </section>
  );
}
