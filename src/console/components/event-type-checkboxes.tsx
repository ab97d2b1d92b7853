import type { WebhookEventType } from '../../client/api-types';
import { WEBHOOK_EVENT_TYPES } from '../lib/vocabulary';

/** The webhook event types an endpoint subscribes to. */
export function EventTypeCheckboxes({ value, onChange }: { value: WebhookEventType[]; onChange(events: WebhookEventType[]): void }) {
  return (
    <fieldset>
      <legend>Events</legend>
      {WEBHOOK_EVENT_TYPES.map((type) => (
        <label key={type} className="inline">
          <input
            type="checkbox"
            checked={value.includes(type)}
            onChange={(event) => onChange(event.target.checked ? [...value, type] : value.filter((known) => known !== type))}
          />
          {type}
        </label>
      ))}
    </fieldset>
  );
}
