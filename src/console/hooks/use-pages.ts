import { useEffect, useState, type DependencyList } from 'react';
import { useErrorReporter } from './session';

export interface Page<T> {
  items: T[];
  /** Where the next page starts (a cursor, a seq); null on the last page. */
  next: string | null;
}

export interface PagedList<T> {
  items: T[];
  next: string | null;
  loading: boolean;
  error: unknown;
  loadMore(): void;
}

/** A list read page by page: the first when `deps` change, the next on `loadMore`. */
export function usePages<T>(loadPage: (start: string | null) => Promise<Page<T>>, deps: DependencyList): PagedList<T> {
  const report = useErrorReporter();
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(null);

  const read = async (start: string | null, isCurrent: () => boolean) => {
    setLoading(true);
    setError(null);
    try {
      const page = await loadPage(start);
      if (!isCurrent()) return;
      setItems((loaded) => (start === null ? page.items : [...loaded, ...page.items]));
      setNext(page.next);
    } catch (caught) {
      if (!isCurrent()) return;
      report(caught);
      setError(caught);
    } finally {
      if (isCurrent()) setLoading(false);
    }
  };

  useEffect(() => {
    let current = true;
    setItems([]);
    setNext(null);
    void read(null, () => current);
    return () => {
      current = false;
    };
    // The caller names what `loadPage` depends on, as with useEffect.
  }, deps);

  return {
    items,
    next,
    loading,
    error,
    loadMore: () => {
      if (next !== null) void read(next, () => true);
    },
  };
}
