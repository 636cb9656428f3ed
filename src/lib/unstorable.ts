/** U+0000 (PostgreSQL text cannot hold it) or a UTF-16 surrogate without its pair (not Unicode). */
export const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether every string in a JSON value (keys included) can be stored as sent. */
export function storable(value: unknown): boolean {
  if (typeof value === 'string') return !UNSTORABLE.test(value);
  if (Array.isArray(value)) return value.every(storable);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => !UNSTORABLE.test(k) && storable(v));
  return true;
}
