import { z } from 'zod';

/** The RFC 9457 problem document of every error (see docs/api.md); without Express, so API clients can share it. */
export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    limit: z
      .object({ name: z.string(), max: z.number().int() })
      .optional()
      .meta({ description: 'With `limit_reached`: which limit of the organization was reached, and its maximum.' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details.' });
