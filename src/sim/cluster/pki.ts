/**
 * Certificates and keys for one local control plane, made with the openssl CLI (Node's crypto makes
 * keys but not X.509 certificates). EC P-256 keys: generating RSA keys on every cluster start is slow.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
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

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('openssl not found: install it (apt-get install openssl)');
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr ?? e.message}`);
  }
}

/** Signs `<name>.crt` (and makes `<name>.key`) in `dir` with the CA there, for `subject`, with extensions `ext`. */
export async function signedCert(dir: string, name: string, subject: string, ext: string): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`], dir);
  await openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      // A random serial of its own: -CAcreateserial's shared ca.srl, read and written by the certificates
      // signed side by side, breaks a start now and then ("Unable to load number from ca.srl").
      '-set_serial',
      `0x${randomBytes(16).toString('hex')}`,
      '-days',
      '30',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
}

export async function createPki(dir: string): Promise<Pki> {
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
  await openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=nuo-local-ca', '-days', '30', '-out', 'ca.crt'],
    dir,
  );
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
