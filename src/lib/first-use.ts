/**
 * `make`, run at the first call and its promise shared by every call after: for what a process
 * loads or builds only once something uses it. A failure is not kept: the next call makes again.
 */
export function onFirstUse<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () =>
    (made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    }));
}
