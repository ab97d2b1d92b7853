import { ApiError } from '../../client/api-client';

/** What went wrong, in the API's words (problem+json `detail` and field errors). */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 402) return `${error.problem.detail} (This needs a higher plan.)`;
    if (error.status === 429 && error.retryAfterSeconds) return `${error.problem.detail} Try again in ${error.retryAfterSeconds} s.`;
    const fields = error.problem.errors?.map((field) => `${field.path}: ${field.message}`) ?? [];
    return [error.problem.detail, ...fields].join(' ');
  }
  if (error instanceof TypeError) return 'The server could not be reached. Check the connection and try again.';
  return error instanceof Error ? error.message : String(error);
}

export function ProblemMessage({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="problem" role="alert">
      {errorText(error)}
    </p>
  );
}
