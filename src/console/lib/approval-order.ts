import type { ApprovalView } from '../../client/api-types';

/** The listing's order (see docs/api.md): newest first, ties broken by id, descending. */
export function newerFirst(a: ApprovalView, b: ApprovalView): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * A fresh first page joined to the older rows already loaded below it, so that live updates keep
 * what the reviewer scrolled to. Rows the first page covers come from it; with no further pages,
 * it is the whole list.
 */
export function withFreshHead(head: ApprovalView[], headHasMore: boolean, loaded: ApprovalView[]): ApprovalView[] {
  const last = head[head.length - 1];
  if (!headHasMore || !last) return head;
  const inHead = new Set(head.map((approval) => approval.id));
  return [...head, ...loaded.filter((approval) => !inHead.has(approval.id) && newerFirst(last, approval) < 0)];
}
