import { ApiError, createApiClient } from '../client/api-client';

/** The console's one client: same origin, the session cookie, and the session's CSRF token on writes. */
export const api = createApiClient();

/** A read whose 404 means "there is none" (a new policy's key, a deleted one) rather than a failure. */
export async function unlessMissing<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}
