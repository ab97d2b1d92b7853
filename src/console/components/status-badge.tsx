import type { ApprovalStatus } from '../../client/api-types';

export function StatusBadge({ status }: { status: ApprovalStatus }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}
