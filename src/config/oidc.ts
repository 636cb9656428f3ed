/** The console's OpenID Connect sign-in (operators.md 1). */
export interface OidcConfig {
  /** OIDC_ISSUER: https, or http on a loopback address. */
  issuer: string;
  /** OIDC_CLIENT_ID, OIDC_CLIENT_SECRET. */
  clientId: string;
  clientSecret: string;
  /** OIDC_DISPLAY_NAME, else the issuer's host: the provider's name on the sign-in button. */
  displayName: string;
}

/** OIDC_DISPLAY_NAME: 1 to 64 characters, no control character, not only spaces. */
const DISPLAY_NAME = /^(?=.*\S)[^\p{Cc}]{1,64}$/u;

/**
 * The OIDC_* settings, or null when none is set; what is wrong is added to `problems`. `url`
 * reads a base URL the way loadConfig reads every other one.
 */
export function readOidc(env: Record<string, string | undefined>, url: (name: string, def: string) => string, problems: string[]): OidcConfig | null {
  const set = ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET'].filter((n) => env[n]);
  if (set.length !== 0 && set.length !== 3) problems.push('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together');
  const issuer = set.length === 3 ? url('OIDC_ISSUER', '') : null;
  if (issuer && issuer.startsWith('http:') && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(issuer)) problems.push('OIDC_ISSUER must be https (http only on a loopback address)');
  const displayName = env.OIDC_DISPLAY_NAME ?? '';
  if (displayName && !issuer) problems.push('OIDC_DISPLAY_NAME needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET');
  if (displayName && !DISPLAY_NAME.test(displayName)) problems.push('OIDC_DISPLAY_NAME must be 1 to 64 printable characters (the sign-in button says "Sign in with <name>")');
  if (!issuer) return null;
  return { issuer, clientId: env.OIDC_CLIENT_ID as string, clientSecret: env.OIDC_CLIENT_SECRET as string, displayName: displayName || hostOf(issuer) };
}

/** The issuer's host, or the issuer itself when it is not a URL (a problem is named already). */
function hostOf(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}
