import type { KeyObject, X509Certificate } from 'node:crypto';
import type { Environment, SignedDataVerifier } from '@apple/app-store-server-library';
import { Errors } from '../../errors.js';

type AppleLibrary = typeof import('@apple/app-store-server-library');
type VerifierClass = new (roots: Buffer[], environment: Environment, bundleId: string, appAppleId: number | undefined, chains: Map<string, VerifiedChain>) => SignedDataVerifier;

/**
 * The library is loaded on first use, not at start: it brings jsrsasign, jsonwebtoken and
 * node-fetch, which cost every instance start time whether or not a game sells on the App Store.
 */
let library: Promise<{ lib: AppleLibrary; Verifier: VerifierClass }> | null = null;
let loaded: AppleLibrary | null = null;
function loadLibrary(): Promise<{ lib: AppleLibrary; Verifier: VerifierClass }> {
  return (library ??= import('@apple/app-store-server-library').then((lib) => {
    loaded = lib;
    return { lib, Verifier: appStoreVerifierClass(lib) };
  }));
}

/** At most this many verified (leaf, intermediate) pairs are kept; Apple uses a handful at once. */
const MAX_CHAINS = 64;
/** At most this many verifiers (one per app and environment) are kept. */
const MAX_VERIFIERS = 1000;

interface VerifiedChain {
  key: KeyObject;
  notBefore: number;
  notAfter: number;
}

/**
 * The library's SignedDataVerifier (online checks off: no network here), with two changes:
 * - Xcode and LocalTesting data must chain to APPLE_ROOT_CERTS as well. The library skips the
 *   signature of those environments (Xcode signs them with a certificate of its own), which
 *   would let anyone holding an order token forge a test purchase; with this, such data is
 *   accepted only when the operator lists the root that signs it.
 * - A chain (leaf and intermediate) verified once is kept, as the library itself does with
 *   online checks on: Apple signs with the same chain for months, and checking it costs
 *   milliseconds. Each JWS's own signature and the chain's dates at its signing time are
 *   still checked every time.
 */
function appStoreVerifierClass(lib: AppleLibrary): VerifierClass {
  return class AppStoreVerifier extends lib.SignedDataVerifier {
    private readonly chains: Map<string, VerifiedChain>;

    constructor(roots: Buffer[], environment: Environment, bundleId: string, appAppleId: number | undefined, chains: Map<string, VerifiedChain>) {
      super(roots, false, environment, bundleId, appAppleId);
      this.chains = chains;
    }

    protected override verifyJWT<T>(jwt: string, validator: Parameters<InstanceType<AppleLibrary['SignedDataVerifier']>['verifyJWT']>[1], signedDate: (decoded: T) => Date): Promise<T> {
      const environment = this.environment;
      if (environment !== lib.Environment.XCODE && environment !== lib.Environment.LOCAL_TESTING) return super.verifyJWT(jwt, validator as never, signedDate);
      // The library reads the environment once, synchronously, before its first await: verified
      // as Sandbox data is. The public methods check the environment afterwards, restored here.
      this.environment = lib.Environment.SANDBOX;
      try {
        return super.verifyJWT(jwt, validator as never, signedDate);
      } finally {
        this.environment = environment;
      }
    }

    protected override async verifyCertificateChain(roots: X509Certificate[], leaf: X509Certificate, intermediate: X509Certificate, effectiveDate: Date): Promise<KeyObject> {
      const id = leaf.fingerprint256 + intermediate.fingerprint256;
      const at = effectiveDate.getTime();
      const known = this.chains.get(id);
      if (known && at >= known.notBefore && at <= known.notAfter) return known.key;
      const key = await this.verifyCertificateChainWithoutCaching(roots, leaf, intermediate, effectiveDate);
      if (this.chains.size >= MAX_CHAINS) this.chains.clear();
      const notBefore = Math.max(Date.parse(leaf.validFrom), Date.parse(intermediate.validFrom));
      const notAfter = Math.min(Date.parse(leaf.validTo), Date.parse(intermediate.validTo));
      this.chains.set(id, { key, notBefore, notAfter });
      return key;
    }
  };
}

export type AppleEnvironment = 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting';
const ENVIRONMENTS: Record<AppleEnvironment, true> = { Production: true, Sandbox: true, Xcode: true, LocalTesting: true };

export function isAppleEnvironment(v: unknown): v is AppleEnvironment {
  return typeof v === 'string' && Object.hasOwn(ENVIRONMENTS, v);
}

/** One verifier per (bundle id, app Apple id, environment), over APPLE_ROOT_CERTS. */
export class AppleVerifiers {
  private readonly verifiers = new Map<string, SignedDataVerifier>();
  private readonly chains = new Map<string, VerifiedChain>();

  constructor(private readonly roots: Buffer[]) {}

  get configured(): boolean {
    return this.roots.length > 0;
  }

  async of(bundleId: string, appAppleId: number | undefined, environment: AppleEnvironment): Promise<SignedDataVerifier> {
    const id = `${bundleId}\n${appAppleId ?? ''}\n${environment}`;
    let v = this.verifiers.get(id);
    if (!v) {
      const { Verifier } = await loadLibrary();
      if (this.verifiers.size >= MAX_VERIFIERS) this.verifiers.clear();
      // The library's Environment values are these very strings.
      v = new Verifier(this.roots, environment as Environment, bundleId, appAppleId, this.chains);
      this.verifiers.set(id, v);
    }
    return v;
  }
}

/** The payload of a JWS, read without verifying it (to pick the order, the game and the verifier). */
export function unverifiedPayload(jws: string, field: string): Record<string, unknown> {
  const parts = jws.split('.');
  let payload: unknown;
  try {
    if (parts.length !== 3) throw new Error('not three parts');
    payload = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8'));
  } catch {
    throw Errors.invalidRequest(`${field} is not a JWS (header.payload.signature, base64url)`);
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw Errors.invalidRequest(`${field}'s payload is not a JSON object`);
  return payload as Record<string, unknown>;
}

/** What a failed verification means, said to the caller (422 payment_rejected). */
export function verificationRefusal(e: unknown, what: string): Error {
  if (!loaded || !(e instanceof loaded.VerificationException)) return e as Error;
  const VerificationStatus = loaded.VerificationStatus;
  const why: Record<number, string> = {
    [VerificationStatus.INVALID_APP_IDENTIFIER]: "it is of another app (bundle id or app Apple id differs from the game's apple channel)",
    [VerificationStatus.INVALID_ENVIRONMENT]: 'its environment differs',
    [VerificationStatus.INVALID_CHAIN_LENGTH]: 'its signature does not verify: the x5c chain is not leaf, intermediate, root',
    [VerificationStatus.INVALID_CERTIFICATE]: 'its signature does not verify: a certificate of its x5c chain is malformed',
    [VerificationStatus.FAILURE]: 'its payload is not what Apple signs',
  };
  return Errors.paymentRejected(`${what} is refused: ${why[e.status] ?? 'its signature does not verify against APPLE_ROOT_CERTS'}`);
}
