import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** The console's client at the test provider. */
export const OIDC_CLIENT = { client_id: 'combo-console', client_secret: 'combo-console-secret-0123456789' };

/** The provider's users: who signs in, and whether the provider vouches for the email. */
export const OIDC_USERS: Record<string, { email: string; email_verified: boolean }> = {
  ann: { email: 'Ann@Studio.example', email_verified: true },
  eve: { email: 'eve@elsewhere.example', email_verified: true },
  unverified: { email: 'ann@studio.example', email_verified: false },
};

export interface OidcProvider {
  issuer: string;
  /** The service's settings for this provider. */
  env: Record<string, string>;
  close(): void;
}

/**
 * A real OpenID Connect provider (the `oidc-provider` package, its development sign-in pages)
 * on loopback, with the console as its client redirecting to `publicBaseUrl`'s callback.
 */
export async function startOidcProvider(publicBaseUrl: string): Promise<OidcProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [{ ...OIDC_CLIENT, redirect_uris: [`${publicBaseUrl}/admin/v1/oidc/callback`], grant_types: ['authorization_code'], response_types: ['code'] }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    findAccount: async (_ctx, id) => (OIDC_USERS[id] ? { accountId: id, claims: async () => ({ sub: id, ...OIDC_USERS[id] }) } : undefined),
    // Consent is taken as given: the test signs in, it does not click through a consent page.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
    ttl: { Interaction: 600, Grant: 600, Session: 600, AccessToken: 600, IdToken: 600 },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: OIDC_CLIENT.client_id, OIDC_CLIENT_SECRET: OIDC_CLIENT.client_secret, PUBLIC_BASE_URL: publicBaseUrl },
    close: () => server.close(),
  };
}
