import { useCallback, useEffect, useState, type DependencyList, type FormEvent } from 'react';
import { useErrorReporter } from './session';

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
  /** Replaces the data in place, after a write whose answer says what it now is. */
  update(change: (data: T) => T): void;
}

/** Data read from the API when the page opens and again whenever `deps` change or `reload` is called. */
export function useResource<T>(load: () => Promise<T>, deps: DependencyList): Resource<T> {
  const report = useErrorReporter();
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [version, setVersion] = useState(0);

  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, error: null, loading: false }),
      (error: unknown) => {
        if (!current) return;
        report(error);
        setState({ data: undefined, error, loading: false });
      },
    );
    return () => {
      current = false;
    };
    // The caller names what `load` depends on, as with useEffect.
  }, [...deps, version]);

  const reload = useCallback(() => setVersion((value) => value + 1), []);
  const update = useCallback(
    (change: (data: T) => T) =>
      setState((previous) => (previous.data === undefined ? previous : { ...previous, data: change(previous.data) })),
    [],
  );
  return { ...state, reload, update };
}

export interface Action<A extends unknown[], T> {
  run(...args: A): Promise<T | undefined>;
  /** A form's submit handler that runs the write (which then takes no arguments) instead of navigating. */
  submit: A extends [] ? (event: FormEvent) => void : never;
  pending: boolean;
  error: unknown;
  reset(): void;
}

/** A write: its pending state and its error, shown next to the control that started it. */
export function useAction<A extends unknown[], T>(write: (...args: A) => Promise<T>): Action<A, T> {
  const report = useErrorReporter();
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A): Promise<T | undefined> => {
    setPending(true);
    setError(null);
    try {
      return await write(...args);
    } catch (caught) {
      report(caught);
      setError(caught);
      return undefined;
    } finally {
      setPending(false);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void run(...([] as unknown as A));
  };
  return { run, submit: submit as Action<A, T>['submit'], pending, error, reset: () => setError(null) };
}
