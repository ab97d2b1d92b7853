import type { SessionView } from '../../client/api-types';
import { api } from '../api';

/**
 * The session, asked for by the entry script before React's bundle has loaded (main.tsx): every
 * page waits on it, and the request then runs while the bundle is compiled and started.
 */
export const initialSession: Promise<SessionView> = api.session.current();
// Read by the session provider once React runs; a refusal (signed out) is no unhandled rejection until then.
initialSession.catch(() => undefined);
