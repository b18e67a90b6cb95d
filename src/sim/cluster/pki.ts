/**
 * Certificates and keys for one local control plane, made with the openssl CLI (Node's crypto makes
 * keys but not X.509 certificates). EC P-256 keys: generating RSA keys on every cluster start is slow.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  /** Signs and verifies service-account tokens (kube-apiserver and the token controller). */
  serviceAccountKey: string;
  serviceAccountPub: string;
}

async function openssl(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
  try {
    await run('openssl', args, { cwd, env: { ...process.env, ...env } });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('openssl not found: install it (apt-get install openssl)');
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr ?? e.message}`);
  }
}

/**
 * How far back every certificate's validity starts: a process whose wall clock is stepped back (the
 * chaos runs' step-clock and skew-clock faults, a VM whose clock lags the host's) must still find the
 * control plane's certificates valid, or it fails every call with CERT_NOT_YET_VALID instead of
 * meeting the fault under test.
 */
export const BACKDATE_S = 24 * 3600;
const VALID_DAYS = 30;

/**
 * `openssl ca` (not `x509 -req`: OpenSSL 3.0 cannot set a start date there), with a directory of the
 * certificate's own (its database and this file), so signings side by side share no file, and random
 * serials.
 */
const CA_CONFIG = `[ ca ]
default_ca = local
[ local ]
database = $ENV::NUO_CA_DB
serial = \${ENV::NUO_CA_DB}.srl
new_certs_dir = $ENV::NUO_CA_OUT
default_md = sha256
policy = any
unique_subject = no
email_in_dn = no
[ any ]
organizationName = optional
commonName = supplied
`;

/** A time as `openssl ca -startdate` reads it: YYYYMMDDHHMMSSZ. */
export const opensslTime = (at: Date) => at.toISOString().replace(/[-:T]|\.\d+/g, '');

/**
 * Signs `<name>.csr` into `<name>.crt` with the CA in `dir` (or itself when `selfsign`), valid from
 * BACKDATE_S ago for VALID_DAYS, with the extensions in `<name>.ext`.
 */
async function sign(dir: string, name: string, selfsign: boolean): Promise<void> {
  const now = Date.now();
  const db = join(dir, `${name}.ca`);
  await mkdir(db, { recursive: true });
  await Promise.all([writeFile(join(db, 'index.txt'), ''), writeFile(join(db, 'ca.cnf'), CA_CONFIG)]);
  await openssl(
    [
      'ca',
      '-batch',
      '-config',
      join(db, 'ca.cnf'),
      ...(selfsign ? ['-selfsign'] : ['-cert', 'ca.crt']),
      '-keyfile',
      'ca.key',
      '-in',
      `${name}.csr`,
      '-rand_serial',
      '-startdate',
      opensslTime(new Date(now - BACKDATE_S * 1000)),
      '-enddate',
      opensslTime(new Date(now + VALID_DAYS * 24 * 3600 * 1000)),
      '-extfile',
      `${name}.ext`,
      '-preserveDN',
      '-notext',
      '-out',
      `${name}.crt`,
    ],
    dir,
    { NUO_CA_DB: join(db, 'index.txt'), NUO_CA_OUT: db },
  );
}

/** Signs `<name>.crt` (and makes `<name>.key`) in `dir` with the CA there, for `subject`, with extensions `ext`. */
export async function signedCert(dir: string, name: string, subject: string, ext: string): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  await openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
  await sign(dir, name, false);
}

const CA_EXT = [
  'basicConstraints=critical,CA:TRUE',
  'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  'subjectKeyIdentifier=hash',
  '',
].join('\n');

export async function createPki(dir: string): Promise<Pki> {
  await writeFile(join(dir, 'ca.ext'), CA_EXT);
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
  await openssl(['req', '-new', '-key', 'ca.key', '-subj', '/CN=nuo-local-ca', '-out', 'ca.csr'], dir);
  await sign(dir, 'ca', true);
  await Promise.all([
    signedCert(
      dir,
      'apiserver',
      '/CN=kube-apiserver',
      [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=serverAuth',
        // 10.0.2.2: the host's loopback as a VM node sees it through qemu's user-mode network.
        'subjectAltName=IP:127.0.0.1,IP:10.0.2.2,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local',
        '',
      ].join('\n'),
    ),
    signedCert(
      dir,
      'admin',
      '/O=system:masters/CN=nuo-admin',
      [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=clientAuth',
        '',
      ].join('\n'),
    ),
    (async () => {
      await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], dir);
      await openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
    })(),
  ]);
  return {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'apiserver.crt'),
    serverKey: join(dir, 'apiserver.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPub: join(dir, 'sa.pub'),
  };
}
