import { Type } from 'typebox';

/**
 * The paging parameters of every operator listing, the same everywhere: `limit` 1..200
 * (default 50) and the opaque `cursor` a previous page answered as `next_cursor`.
 */
export const PageLimit = Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'page size, 1..200' }));
export const PageCursor = Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'next_cursor of the previous page' }));

/**
 * Listings without a game filter read each game's newest rows through a per-game index and merge
 * them, for up to this many games (SQLite allows 500 terms in one compound SELECT); beyond, one
 * query filters the whole table.
 */
export const MAX_MERGED_GAMES = 200;
