/**
 * Trying a draft against a sample request before saving needs the server to evaluate a policy
 * without creating anything (`POST /v1/policies/:key/evaluate`, contract C12). This server does
 * not offer it yet, so the console says so instead of guessing at an evaluation of its own.
 */
export function PolicyTryPanel() {
  return (
    <section className="panel" aria-labelledby="try-title">
      <h2 id="try-title">Try against a sample request</h2>
      <p id="try-unavailable" className="hint">
        Needs server support for evaluating a draft (POST /v1/policies/:key/evaluate), which this server does not offer yet. Only the
        server's CEL evaluation is trusted here, so nothing is evaluated in the browser.
      </p>
      <button type="button" disabled aria-describedby="try-unavailable">
        Try the draft
      </button>
    </section>
  );
}
