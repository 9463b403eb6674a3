/**
 * once returns a function that runs f the first time it is called and
 * returns its promise to every later call, unless it failed: then the next
 * call runs f again.
 */
export function once(f: () => Promise<unknown>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => {
    p ??= f().then(
      () => undefined,
      (e: unknown) => {
        p = undefined;
        throw e;
      },
    );
    return p;
  };
}
