import type { PagedList } from '../hooks/use-pages';

/** The end of a paged list: what to say when nothing matched, or the button for the next page. */
export function ListEnd({ list, empty }: { list: PagedList<unknown>; empty: string }) {
  if (!list.loading && list.items.length === 0 && !list.error) return <p className="empty">{empty}</p>;
  if (!list.next) return null;
  return (
    <button type="button" onClick={list.loadMore} disabled={list.loading}>
      Load more
    </button>
  );
}
