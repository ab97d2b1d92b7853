import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { ApiError } from '../../client/api-client';
import type { PolicyDocumentInput, PolicyRule, PolicyView } from '../../client/api-types';
import { api } from '../api';
import { ConfirmDialog } from '../components/dialog';
import { ProblemMessage } from '../components/problem-message';
import { PolicyTryPanel } from '../components/policy-try-panel';
import { useMember } from '../hooks/session';
import { useAction, useResource } from '../hooks/use-resource';

type Outcome = PolicyRule['outcome'];

/** The editor's state: the document's fields as the inputs hold them. */
interface Draft {
  rules: PolicyRule[];
  defaultOutcome: Outcome;
  timeoutSeconds: string;
  onTimeout: PolicyView['onTimeout'];
  escalateTo: string;
}

const NEW_POLICY: Draft = { rules: [], defaultOutcome: 'review', timeoutSeconds: '3600', onTimeout: 'expire', escalateTo: '' };

function draftOf(policy: PolicyView): Draft {
  return {
    rules: policy.rules.map((rule) => ({ ...rule })),
    defaultOutcome: policy.defaultOutcome,
    timeoutSeconds: String(policy.timeoutSeconds),
    onTimeout: policy.onTimeout,
    escalateTo: policy.escalateTo ?? '',
  };
}

function documentOf(draft: Draft): PolicyDocumentInput {
  return {
    rules: draft.rules,
    defaultOutcome: draft.defaultOutcome,
    ...(draft.timeoutSeconds.trim() ? { timeoutSeconds: Number(draft.timeoutSeconds) } : {}),
    onTimeout: draft.onTimeout,
    escalateTo: draft.escalateTo.trim() || null,
  };
}

/** A policy's rules and timeout, edited; a rule whose CEL the server refuses shows the error under it. */
export function PolicyEditorPage() {
  const { key = '' } = useParams();
  const { can } = useMember();
  const editable = can('policies:write');
  const navigate = useNavigate();
  const stored = useResource(
    () =>
      api.policies.get(key).catch((error: unknown) => (error instanceof ApiError && error.status === 404 ? null : Promise.reject(error))),
    [key],
  );
  const [draft, setDraft] = useState<Draft>(NEW_POLICY);
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  useEffect(() => {
    if (stored.data !== undefined) setDraft(stored.data ? draftOf(stored.data) : NEW_POLICY);
  }, [stored.data]);

  const save = useAction(async () => {
    const policy = await api.policies.put(key, documentOf(draft));
    stored.update(() => policy);
    setSaved(true);
  });
  const remove = useAction(async () => {
    await api.policies.delete(key);
    navigate('/policies');
  });
  const problem = save.error instanceof ApiError && save.error.status === 422 ? save.error : null;
  const fieldError = (path: string) => problem?.problem.errors?.filter((error) => error.path === path || error.path.startsWith(`${path}.`));
  const unplaced = problem?.problem.errors?.filter(
    (error) => !/^(rules\.\d+|defaultOutcome|timeoutSeconds|onTimeout|escalateTo)/.test(error.path),
  );

  const change = (patch: Partial<Draft>) => {
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
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void save.run();
  };

  if (stored.error) return <ProblemMessage error={stored.error} />;
  if (stored.data === undefined) return <p role="status">Loading…</p>;
  return (
    <section aria-labelledby="policy-title">
      <h1 id="policy-title">
        Policy {key} {stored.data === null && <span className="badge">new</span>}
      </h1>
      <form onSubmit={submit} className="stack">
        <fieldset disabled={!editable}>
          <legend>Rules, tried in order; the first that holds gives the outcome</legend>
          {/* Numbered from 0, as the API numbers them (`rules.2.when`, `matchedRule`) and as its errors name them. */}
          {draft.rules.length === 0 && <p className="hint">No rules: every request gets the default outcome.</p>}
          <ol className="rules">
            {draft.rules.map((rule, index) => {
              const errors = fieldError(`rules.${index}`) ?? [];
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
                  {errors.length > 0 && (
                    <p id={errorId} className="field-error" role="alert">
                      {errors.map((error) => error.message).join(' ')}
                    </p>
                  )}
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
          <label>
            Default outcome
            <select value={draft.defaultOutcome} onChange={(event) => change({ defaultOutcome: event.target.value as Outcome })}>
              <option value="review">review</option>
              <option value="allow">allow</option>
            </select>
          </label>
          <FieldErrors errors={fieldError('defaultOutcome')} />
          <label>
            Timeout (seconds)
            <input inputMode="numeric" value={draft.timeoutSeconds} onChange={(event) => change({ timeoutSeconds: event.target.value })} />
          </label>
          <FieldErrors errors={fieldError('timeoutSeconds')} />
          <label>
            On timeout
            <select value={draft.onTimeout} onChange={(event) => change({ onTimeout: event.target.value as Draft['onTimeout'] })}>
              <option value="expire">expire</option>
              <option value="escalate">escalate</option>
            </select>
          </label>
          <label>
            Escalate to policy (optional)
            <input value={draft.escalateTo} onChange={(event) => change({ escalateTo: event.target.value })} />
          </label>
          <FieldErrors errors={fieldError('escalateTo')} />
        </fieldset>
        {problem ? (
          <p className="problem" role="alert">
            Not saved: the server refused {problem.problem.errors?.length === 1 ? 'one field' : 'some fields'}, marked above.{' '}
            {unplaced?.map((error) => `${error.path}: ${error.message}`).join(' ')}
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
      <PolicyTryPanel />
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

function FieldErrors({ errors }: { errors: { message: string }[] | undefined }) {
  if (!errors?.length) return null;
  return (
    <p className="field-error" role="alert">
      {errors.map((error) => error.message).join(' ')}
    </p>
  );
}
