import { useState } from 'react';
import type { PolicyDocumentInput } from '../../client/api-types';
import { DRAFT_PREFIX, draftErrorsOf, type FieldError } from '../lib/policy-draft';
import { useAction } from './use-resource';

/** What a panel that sends the policy editor's draft to the server takes from the editor. */
export interface DraftPanelProps {
  policyKey: string;
  /** The draft as it stands now. */
  document(): PolicyDocumentInput;
  /** Where the server's errors about the draft go: the editor marks the rules they name. */
  onDraftRefused(errors: FieldError[]): void;
}

/**
 * A request made with the editor's draft (trying it, replaying it): its answer, and whether the
 * server refused the draft alone, whose errors go back to the editor rather than to the panel.
 * `send` answers null when the panel's own input is not ready: nothing is sent.
 */
export function useDraftRequest<T>(onDraftRefused: DraftPanelProps['onDraftRefused'], send: () => Promise<T> | null) {
  const [result, setResult] = useState<T | null>(null);
  const [draftRefused, setDraftRefused] = useState(false);
  const action = useAction(async () => {
    const sending = send();
    if (!sending) return;
    setResult(null);
    setDraftRefused(false);
    onDraftRefused([]);
    try {
      setResult(await sending);
    } catch (error) {
      const { errors, onlyDraft } = draftErrorsOf(error, DRAFT_PREFIX);
      onDraftRefused(errors);
      setDraftRefused(onlyDraft);
      if (!onlyDraft) throw error;
    }
  });
  return { result, draftRefused, action };
}
