import type { z } from 'zod';
import type { FieldError } from './errors.js';

/** Zod issues as contract C1 field errors, with paths as the client wrote them. */
export function fieldErrors(error: z.ZodError, root: string): FieldError[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: path ? `${path}.${key}` : key, message: 'Unknown field' }));
    }
    return [{ path: path || root, message: issue.message }];
  });
}
