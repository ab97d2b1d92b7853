/**
 * What an inbox row says about a request's payload (see docs/members-and-channels.md#the-console): its leading
 * fields in the order the agent sent them, cut at a bounded length, and the amount when a field
 * names one. A row offers one-click approve only when `complete` is true: the summary shows every
 * field, so the reviewer has seen all they approve.
 */
export interface PayloadSummary {
  text: string;
  complete: boolean;
  amount: string | null;
}

/** Characters of the summary line; about one line of a desktop row, two on a phone. */
export const SUMMARY_MAX_CHARS = 120;

/** Fields read as the amount, in this order; `currency` (an ISO 4217 code) formats it. */
const AMOUNT_FIELDS = ['amount', 'total', 'value'] as const;

function scalar(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return Array.isArray(value) ? `[${value.length} items]` : '{…}';
}

export function formatAmount(payload: Record<string, unknown>): string | null {
  const field = AMOUNT_FIELDS.find((name) => typeof payload[name] === 'number' && Number.isFinite(payload[name]));
  if (!field) return null;
  const value = payload[field] as number;
  const currency = typeof payload.currency === 'string' ? payload.currency.trim().toUpperCase() : '';
  if (/^[A-Z]{3}$/.test(currency)) {
    try {
      return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(value);
    } catch {
      // An unknown code: written beside the number below.
    }
  }
  return `${new Intl.NumberFormat().format(value)}${currency ? ` ${currency}` : ''}`;
}

export function summarizePayload(payload: Record<string, unknown>): PayloadSummary {
  const amount = formatAmount(payload);
  const entries = Object.entries(payload);
  if (entries.length === 0) return { text: 'empty payload', complete: true, amount };
  let text = '';
  let complete = true;
  for (const [key, value] of entries) {
    const whole = typeof value !== 'object' || value === null;
    const part = `${text ? ', ' : ''}${key}: ${scalar(value)}`;
    if (text.length + part.length > SUMMARY_MAX_CHARS) {
      complete = false;
      text = text ? `${text}, …` : `${part.slice(0, SUMMARY_MAX_CHARS - 1)}…`;
      break;
    }
    text += part;
    // A nested object or array is only named, not shown: the reviewer has not seen it.
    if (!whole) complete = false;
  }
  return { text, complete, amount };
}
