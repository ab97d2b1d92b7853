import { useEffect, useState, type ReactNode } from 'react';
import { useNavigate, useParams } from 'react-router';
import { ApiError } from '../../client/api-client';
import type { PolicyRule } from '../../client/api-types';
import { api, unlessMissing } from '../api';
import { CheckboxGroup } from '../components/checkbox-group';
import { ConfirmDialog } from '../components/dialog';
import { PolicyReplayPanel } from '../components/policy-replay-panel';
import { PolicyShadowPanel } from '../components/policy-shadow-panel';
import { PolicyTryPanel } from '../components/policy-try-panel';
import { PolicyVersionsPanel } from '../components/policy-versions-panel';
import { ProblemMessage } from '../components/problem-message';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';
import { documentOf, draftOf, NEW_POLICY, type FieldError, type Outcome, type PolicyDraft } from '../lib/policy-draft';
import { DECISION_CHANNELS, REVIEWER_ROLES } from '../lib/vocabulary';

/** Where each field's errors are shown; anything else is listed under the form. */
const PLACED = /^(rules\.\d+|defaultOutcome|timeoutSeconds|onTimeout|escalateTo|reviewers|quorum|allowSelfApproval|channels)\b/;

/**
 * A policy's rules, timeout and reviewers, edited and tried. A rule the server refuses (its CEL
 * does not compile, or does not return a boolean) shows the server's message under the rule.
 */
export function PolicyEditorPage() {
  const { key = '' } = useParams();
  const { can } = useMember();
  const editable = can('policies:write');
  const navigate = useNavigate();
  const stored = useResource(() => unlessMissing(api.policies.get(key)), [key]);
  const [draft, setDraft] = useState<PolicyDraft>(NEW_POLICY);
  const [fieldErrors, setFieldErrors] = useState<FieldError[]>([]);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  // The draft starts from what was read; storing a shadow (below) changes the policy, not the draft.
  useEffect(() => {
    if (!stored.loading && stored.data !== undefined) setDraft(stored.data ? draftOf(stored.data) : NEW_POLICY);
  }, [stored.loading]);

  const save = useAction(async () => {
    setFieldErrors([]);
    try {
      // The shadow is set in its own panel; saving the rules keeps it.
      const policy = await api.policies.put(key, { ...documentOf(draft), shadow: stored.data?.shadow ?? null });
      stored.update(() => policy);
      setDraft(draftOf(policy));
      setSaved(true);
    } catch (error) {
      if (error instanceof ApiError && error.status === 422) setFieldErrors(error.problem.errors ?? []);
      throw error;
    }
  });
  const remove = useAction(async () => {
    await api.policies.delete(key);
    navigate('/policies');
  });

  const errorsAt = (path: string) => fieldErrors.filter((error) => error.path === path || error.path.startsWith(`${path}.`));
  const change = (patch: Partial<PolicyDraft>) => {
    setSaved(false);
    setDraft((current) => ({ ...current, ...patch }));
  };
  const changeRule = (index: number, patch: Partial<PolicyRule>) =>
    change({ rules: draft.rules.map((rule, at) => (at === index ? { ...rule, ...patch } : rule)) });
  const moveRule = (index: number, by: number) => {
    const rules = [...draft.rules];
    const [rule] = rules.splice(index, 1);
    rules.splice(index + by, 0, rule!);
    change({ rules });
  };
  if (stored.error) return <ProblemMessage error={stored.error} />;
  if (stored.data === undefined) return <p role="status">Loading…</p>;
  const unplaced = fieldErrors.filter((error) => !PLACED.test(error.path));
  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">
        Policy {key} {stored.data === null && <span className="badge">new</span>}
      </h1>
      <form onSubmit={save.submit} className="stack">
        <fieldset disabled={!editable}>
          <legend>Rules, tried in order; the first that holds gives the outcome</legend>
          {draft.rules.length === 0 && <p className="hint">No rules: every request gets the default outcome.</p>}
          {/* Numbered from 0, as the API numbers them (`rules.2.when`, `matchedRule`) and as its errors name them. */}
          <ol className="rules">
            {draft.rules.map((rule, index) => {
              const errors = errorsAt(`rules.${index}`);
              const errorId = `rule-${index}-error`;
              return (
                <li key={index} className={errors.length > 0 ? 'rule invalid' : 'rule'}>
                  <label>
                    Rule {index} condition (CEL)
                    <textarea
                      className="mono"
                      rows={2}
                      spellCheck={false}
                      value={rule.when}
                      aria-invalid={errors.length > 0}
                      aria-describedby={errors.length > 0 ? errorId : undefined}
                      onChange={(event) => changeRule(index, { when: event.target.value })}
                    />
                  </label>
                  <FieldErrors id={errorId} errors={errors} />
                  <div className="actions">
                    <label className="inline">
                      Rule {index} outcome
                      <select value={rule.outcome} onChange={(event) => changeRule(index, { outcome: event.target.value as Outcome })}>
                        <option value="allow">allow</option>
                        <option value="review">review</option>
                      </select>
                    </label>
                    <button type="button" aria-label={`Move rule ${index} up`} disabled={index === 0} onClick={() => moveRule(index, -1)}>
                      ↑
                    </button>
                    <button
                      type="button"
                      aria-label={`Move rule ${index} down`}
                      disabled={index === draft.rules.length - 1}
                      onClick={() => moveRule(index, 1)}
                    >
                      ↓
                    </button>
                    <button
                      type="button"
                      aria-label={`Remove rule ${index}`}
                      onClick={() => change({ rules: draft.rules.filter((_, at) => at !== index) })}
                    >
                      Remove
                    </button>
                  </div>
                </li>
              );
            })}
          </ol>
          <button type="button" onClick={() => change({ rules: [...draft.rules, { when: '', outcome: 'review' }] })}>
            Add rule
          </button>
        </fieldset>

        <fieldset disabled={!editable}>
          <legend>Otherwise, and on timeout</legend>
          <Field label="Default outcome" errors={errorsAt('defaultOutcome')}>
            <select value={draft.defaultOutcome} onChange={(event) => change({ defaultOutcome: event.target.value as Outcome })}>
              <option value="review">review</option>
              <option value="allow">allow</option>
            </select>
          </Field>
          <Field label="Timeout (seconds)" errors={errorsAt('timeoutSeconds')}>
            <input inputMode="numeric" value={draft.timeoutSeconds} onChange={(event) => change({ timeoutSeconds: event.target.value })} />
          </Field>
          <Field label="On timeout" errors={errorsAt('onTimeout')}>
            <select value={draft.onTimeout} onChange={(event) => change({ onTimeout: event.target.value as PolicyDraft['onTimeout'] })}>
              <option value="expire">expire</option>
              <option value="escalate">escalate</option>
            </select>
          </Field>
          <Field label="Escalate to policy (optional)" errors={errorsAt('escalateTo')}>
            <input value={draft.escalateTo} onChange={(event) => change({ escalateTo: event.target.value })} />
          </Field>
        </fieldset>

        <fieldset disabled={!editable}>
          <legend>Who decides, and where</legend>
          <CheckboxGroup
            legend="Roles that may decide"
            options={REVIEWER_ROLES}
            value={draft.reviewerRoles}
            onChange={(reviewerRoles) => change({ reviewerRoles })}
          />
          <Field label="Members who may decide whatever their role (emails, one per line)" errors={errorsAt('reviewers')}>
            <textarea rows={2} value={draft.reviewerMembers} onChange={(event) => change({ reviewerMembers: event.target.value })} />
          </Field>
          <Field label="Approvals needed (quorum)" errors={errorsAt('quorum')}>
            <input inputMode="numeric" value={draft.quorum} onChange={(event) => change({ quorum: event.target.value })} />
          </Field>
          <label className="inline">
            <input
              type="checkbox"
              checked={draft.allowSelfApproval}
              onChange={(event) => change({ allowSelfApproval: event.target.checked })}
            />
            Allow self-approval (by the member a request is on behalf of, or by the key that created it)
          </label>
          <CheckboxGroup
            legend="Channels a decision may come through"
            options={DECISION_CHANNELS}
            value={draft.channels}
            onChange={(channels) => change({ channels })}
          />
          <FieldErrors errors={errorsAt('channels')} />
        </fieldset>

        {fieldErrors.length > 0 ? (
          <p className="problem" role="alert">
            The server refused the policy; the fields it named are marked above.{' '}
            {unplaced.map((error) => `${error.path}: ${error.message}`).join(' ')}
          </p>
        ) : (
          <ProblemMessage error={save.error} />
        )}
        {saved && (
          <p role="status" className="notice">
            Saved. New requests are evaluated under this version.
          </p>
        )}
        {editable && (
          <div className="actions">
            <button type="submit" className="primary" disabled={save.pending}>
              Save policy
            </button>
            {stored.data && (
              <button type="button" className="danger" onClick={() => setDeleting(true)}>
                Delete policy
              </button>
            )}
          </div>
        )}
      </form>
      <div className="side-by-side">
        <PolicyTryPanel policyKey={key} document={() => documentOf(draft)} onDraftRefused={setFieldErrors} />
        {stored.data && <PolicyReplayPanel policyKey={key} document={() => documentOf(draft)} onDraftRefused={setFieldErrors} />}
      </div>
      {stored.data && (
        <PolicyShadowPanel
          policyKey={key}
          stored={stored.data}
          editable={editable}
          draft={() => documentOf(draft)}
          onStored={(policy) => stored.update(() => policy)}
          onDraftRefused={setFieldErrors}
        />
      )}
      <PolicyVersionsPanel policyKey={key} current={stored.data?.version ?? null} />
      {deleting && (
        <ConfirmDialog
          title={`Delete policy ${key}?`}
          message="Requests that name it afterwards become orphans. Pending requests keep their timeout."
          confirmLabel="Delete policy"
          pending={remove.pending}
          error={<ProblemMessage error={remove.error} />}
          onConfirm={() => void remove.run()}
          onClose={() => setDeleting(false)}
        />
      )}
    </section>
  );
}

function Field({ label, errors, children }: { label: string; errors: FieldError[]; children: ReactNode }) {
  return (
    <>
      <label>
        {label}
        {children}
      </label>
      <FieldErrors errors={errors} />
    </>
  );
}

function FieldErrors({ id, errors }: { id?: string; errors: FieldError[] }) {
  if (errors.length === 0) return null;
  return (
    <p id={id} className="field-error" role="alert">
      {errors.map((error) => error.message).join(' ')}
    </p>
  );
}
