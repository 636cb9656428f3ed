import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Certificate {
  cert: string;
  key: string;
  /** The certificate then its key, in one file (HAProxy's form). */
  pem: string;
}

/**
 * A self-signed P-256 certificate for 127.0.0.1 (so it is its own CA), valid for a day, and its
 * key, written under `dir` as `<name>-cert.pem`, `<name>-key.pem` and `<name>.pem`. Made by the
 * `openssl` command, which the tests and the benchmark need for TLS.
 */
export function selfSignedCertificate(dir: string, name = 'server'): Certificate {
  const [cert, key, pem] = [`${name}-cert.pem`, `${name}-key.pem`, `${name}.pem`].map((f) => path.join(dir, f)) as [string, string, string];
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1', '-keyout', key, '-out', cert],
    { stdio: 'ignore' },
  );
  writeFileSync(pem, readFileSync(cert, 'utf8') + readFileSync(key, 'utf8'));
  return { cert, key, pem };
}
