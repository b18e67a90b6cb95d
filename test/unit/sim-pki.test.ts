import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createPki } from '../../src/sim/cluster/pki.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-pki-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const serial = (cert: string) =>
  execFileSync('openssl', ['x509', '-in', cert, '-noout', '-serial'], { encoding: 'utf8' });

test('createPki signs each certificate with a serial of its own, sharing no serial file between the signings it runs side by side', async () => {
  const pki = await createPki(dir);
  assert.equal(existsSync(join(dir, 'ca.srl')), false, 'no ca.srl for two openssl processes to race on');
  const serials = [pki.serverCert, pki.adminCert].map(serial);
  assert.match(serials[0] ?? '', /^serial=[0-9A-F]{30,32}\n$/);
  assert.notEqual(serials[0], serials[1]);
  for (const cert of [pki.serverCert, pki.adminCert])
    execFileSync('openssl', ['verify', '-CAfile', pki.caCert, cert], { encoding: 'utf8' });
});
