/** A `datetime-local` input's value (the reviewer's local time) as the ISO 8601 instant the API takes. */
export function localInputToIso(value: string): string | undefined {
  if (!value) return undefined;
  const instant = new Date(value);
  return Number.isNaN(instant.getTime()) ? undefined : instant.toISOString();
}

/** An ISO 8601 instant as a `datetime-local` input's value, in local time. */
export function isoToLocalInput(iso: string | null): string {
  if (!iso) return '';
  const instant = new Date(iso);
  if (Number.isNaN(instant.getTime())) return '';
  const local = new Date(instant.getTime() - instant.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}
