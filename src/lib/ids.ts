const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids that are not UUIDs cannot exist; callers answer 404 without asking the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
