/** A value, or a promise of it where it is not at hand yet (hot paths avoid a promise per call). */
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(v: MaybePromise<T>): v is Promise<T> {
  return v instanceof Promise;
}
