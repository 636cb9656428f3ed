import { createHash } from 'node:crypto';

/**
 * Stable 32-character identifiers the national system needs: `si` for a session (our
 * session_id has up to 64 characters, theirs at most 32) and `di` for a guest player.
 * Hashing keeps them stable across processes and restarts without storing a mapping.
 */
export function nppaSessionId(gameId: string, sessionId: string): string {
  return createHash('sha256').update(`${gameId}\n${sessionId}`).digest('hex').slice(0, 32);
}

export function nppaDeviceId(comboId: string): string {
  return createHash('sha256').update(`di\n${comboId}`).digest('hex').slice(0, 32);
}
