import { z } from 'zod';

/** `limit` of a listing (docs/api.md#listing-approvals): 1–200 from the query string, 50 when absent. */
export const pageLimitSchema = z
  .string()
  .regex(/^\d{1,4}$/, 'limit must be an integer from 1 to 200')
  .transform(Number)
  .pipe(z.number().min(1, 'limit must be an integer from 1 to 200').max(200, 'limit must be an integer from 1 to 200'))
  .default(50);
