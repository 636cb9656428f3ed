import { execFileSync } from 'node:child_process';
import { createPrivateKey, randomUUID, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Apple's side of the App Store, as the tests play it: a certificate chain made here with the
 * `openssl` command, shaped as Apple's (a root CA; an intermediate carrying the Apple WWDR
 * marker OID 1.2.840.113635.100.6.2.1; a leaf carrying the App Store receipt-signing OID
 * 1.2.840.113635.100.6.11.1), and JWS signed with the leaf as the App Store signs
 * transactions and notifications (ES256, the chain in the `x5c` header).
 */
export interface AppleChain {
  /** The root certificate, PEM file (for APPLE_ROOT_CERTS). */
  rootPem: string;
  /** The same root, DER file. */
  rootDer: string;
  /** Signs `payload` as a JWS with this chain's leaf. */
  sign(payload: object): string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore' });
}

export function makeAppleChain(name = 'apple'): AppleChain {
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-chain-`));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-subj', `/CN=${name} Test Root CA/O=Test`, '-days', '3650', '-keyout', 'root.key', '-out', 'root.pem', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  writeFileSync(path.join(dir, 'int.ext'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n1.2.840.113635.100.6.2.1=ASN1:NULL\n');
  writeFileSync(path.join(dir, 'leaf.ext'), 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n1.2.840.113635.100.6.11.1=ASN1:NULL\n');
  openssl(['req', ...ec, '-subj', `/CN=${name} Test WWDR/O=Test`, '-keyout', 'int.key', '-out', 'int.csr'], dir);
  openssl(['x509', '-req', '-in', 'int.csr', '-CA', 'root.pem', '-CAkey', 'root.key', '-CAcreateserial', '-days', '3650', '-extfile', 'int.ext', '-out', 'int.pem'], dir);
  openssl(['req', ...ec, '-subj', `/CN=${name} Test StoreKit Signing/O=Test`, '-keyout', 'leaf.key', '-out', 'leaf.csr'], dir);
  openssl(['x509', '-req', '-in', 'leaf.csr', '-CA', 'int.pem', '-CAkey', 'int.key', '-CAcreateserial', '-days', '3650', '-extfile', 'leaf.ext', '-out', 'leaf.pem'], dir);
  const der = (f: string) => new X509Certificate(readFileSync(path.join(dir, f))).raw;
  const rootDer = path.join(dir, 'root.der');
  writeFileSync(rootDer, der('root.pem'));
  const x5c = ['leaf.pem', 'int.pem', 'root.pem'].map((f) => der(f).toString('base64'));
  const key: KeyObject = createPrivateKey(readFileSync(path.join(dir, 'leaf.key')));
  return {
    rootPem: path.join(dir, 'root.pem'),
    rootDer,
    sign: (payload) => signJws({ alg: 'ES256', x5c }, payload, key),
  };
}

export function signJws(header: object, payload: object, key: KeyObject): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${b64(header)}.${b64(payload)}`;
  const sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return `${input}.${sig}`;
}

export interface TransactionFields {
  bundleId: string;
  productId: string;
  appAccountToken?: string;
  environment?: 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting';
  transactionId?: string;
  quantity?: number;
  /** Milliunits of `currency` (Apple's `price`). */
  price?: number;
  currency?: string;
  [more: string]: unknown;
}

/** A JWSTransaction payload of a consumable bought now (Apple's fields and units). */
export function transaction(f: TransactionFields): Record<string, unknown> {
  const now = Date.now();
  const transactionId = f.transactionId ?? String(2_000_000_000_000_000 + Math.floor(Math.random() * 1e12));
  return {
    transactionId,
    originalTransactionId: transactionId,
    purchaseDate: now,
    originalPurchaseDate: now,
    quantity: 1,
    type: 'Consumable',
    inAppOwnershipType: 'PURCHASED',
    signedDate: now,
    environment: 'Sandbox',
    transactionReason: 'PURCHASE',
    storefront: 'USA',
    storefrontId: '143441',
    price: 990,
    currency: 'USD',
    ...f,
  };
}

/** An App Store Server Notification V2 payload (`data` of the app, with a signed transaction). */
export function notification(type: string, data: { bundleId: string; appAppleId?: number; environment?: string; signedTransactionInfo?: string }, subtype?: string): Record<string, unknown> {
  return {
    notificationType: type,
    ...(subtype ? { subtype } : {}),
    notificationUUID: randomUUID(),
    version: '2.0',
    signedDate: Date.now(),
    data: { environment: 'Sandbox', ...data },
  };
}
