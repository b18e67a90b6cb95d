import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BACKDATE_S, createPki, opensslTime } from '../../src/sim/cluster/pki.ts';

const dir = mkdtempSync(join(tmpdir(), 'nuo-pki-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const serial = (cert: string) =>
  execFileSync('openssl', ['x509', '-in', cert, '-noout', '-serial'], { encoding: 'utf8' });
const notBefore = (cert: string) =>
  Date.parse(
    execFileSync('openssl', ['x509', '-in', cert, '-noout', '-startdate'], { encoding: 'utf8' }).replace(
      'notBefore=',
      '',
    ),
  );
const subject = (cert: string) =>
  execFileSync('openssl', ['x509', '-in', cert, '-noout', '-subject'], { encoding: 'utf8' }).trim();

test('createPki signs each certificate with a serial of its own, sharing no serial file between the signings it runs side by side', async () => {
  const pki = await createPki(dir);
  assert.equal(existsSync(join(dir, 'ca.srl')), false, 'no ca.srl for two openssl processes to race on');
  const serials = [pki.serverCert, pki.adminCert].map(serial);
  assert.match(serials[0] ?? '', /^serial=[0-9A-F]{30,40}\n$/);
  assert.notEqual(serials[0], serials[1]);
  for (const cert of [pki.serverCert, pki.adminCert])
    execFileSync('openssl', ['verify', '-CAfile', pki.caCert, cert], { encoding: 'utf8' });
});

test('every certificate is valid from BACKDATE_S ago, so a process whose clock was stepped back still trusts the control plane', async () => {
  const before = Date.now();
  const dated = join(dir, 'dated');
  mkdirSync(dated);
  const pki = await createPki(dated);
  for (const cert of [pki.caCert, pki.serverCert, pki.adminCert]) {
    const start = notBefore(cert);
    assert.ok(
      start <= before - (BACKDATE_S - 60) * 1000,
      `${cert} valid from ${new Date(start).toISOString()}`,
    );
    const stepped = new Date(before - 600_000);
    execFileSync('openssl', [
      'verify',
      '-attime',
      String(Math.floor(stepped.getTime() / 1000)),
      '-CAfile',
      pki.caCert,
      cert,
    ]);
  }
  assert.equal(subject(pki.adminCert), 'subject=O = system:masters, CN = nuo-admin', "the CSR's order kept");
});

test('opensslTime writes what openssl ca -startdate reads', () => {
  assert.equal(opensslTime(new Date('2026-12-07T14:03:09.512Z')), '20261207140309Z');
});
