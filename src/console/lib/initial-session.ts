import type { SessionView } from '../../client/api-types';
import { api } from '../api';

/**
 * The session, asked for as the bundle starts, before React's modules run (main.tsx imports this
 * first): every page waits on it, and the request then runs while React starts.
 */
export const initialSession: Promise<SessionView> = api.session.current();
// Read by the session provider once React runs; a refusal (signed out) is no unhandled rejection until then.
initialSession.catch(() => undefined);
