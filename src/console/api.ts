import { createApiClient } from '../client/api-client';

/** The console's one client: same origin, the session cookie, and the session's CSRF token on writes. */
export const api = createApiClient();
