import { isUuid } from '../../lib/ids.js';

/**
 * The keyset position of a listing page, (createdAt, id) of its last row, as an opaque token:
 * base64url of `<epoch ms>.<id>`. Clients pass it back unchanged; its form is not part of the API.
 */
export function encodeListCursor(last: { createdAt: Date; id: string }): string {
  return Buffer.from(`${last.createdAt.getTime()}.${last.id}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or null when it is not one this API gave out. */
export function decodeListCursor(cursor: string): { createdAt: Date; id: string } | null {
  const match = /^(\d{1,15})\.([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || !isUuid(match[2]!)) return null;
  return { createdAt: new Date(Number(match[1])), id: match[2]! };
}
