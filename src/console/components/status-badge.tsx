import type { ApprovalStatus } from '../../client/api-types';
import { STATUS_LABELS } from '../lib/vocabulary';

export function StatusBadge({ status }: { status: ApprovalStatus }) {
  return <span className={`badge badge-${status}`}>{STATUS_LABELS[status]}</span>;
}
