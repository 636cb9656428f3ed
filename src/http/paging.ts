import { Type } from 'typebox';

/**
 * The paging parameters of every operator listing, the same everywhere: `limit` 1..200
 * (default 50) and the opaque `cursor` a previous page answered as `next_cursor`.
 */
export const PageLimit = Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size, 1..200' }));
export const PageCursor = Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'next_cursor of the previous page' }));

