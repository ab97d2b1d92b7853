import { useMemo, useState } from 'react';
import { prettyJson } from '../lib/format';
import { parsePayload, jsonLineDiff } from '../lib/json-edit';

/**
 * A payload edited as JSON text, starting from `payload`: the text, what it parses to, and whether
 * it differs from `payload`. Shared by editing before approval and suggesting a payload.
 */
export function usePayloadDraft(payload: Record<string, unknown>) {
  const [text, setText] = useState(() => prettyJson(payload));
  const parsed = useMemo(() => parsePayload(text), [text]);
  const changed = useMemo(() => parsed.ok && jsonLineDiff(payload, parsed.value).some((line) => line.kind !== 'same'), [payload, parsed]);
  return { text, setText, parsed, changed };
}
