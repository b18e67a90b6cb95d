/**
 * A local apt repository for VM nodes: packages built with dpkg-deb, a flat repository's Packages and
 * Release files written beside them, served over HTTP on the host's loopback (the VMs reach it at
 * 10.0.2.2). What an unattended upgrade installs from on a Debian node.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { basename, join, normalize } from 'node:path';

export interface DebPackage {
  name: string;
  version: string;
  /** The maintainer script run after unpacking (`#!/bin/sh` prepended). */
  postinst: string;
}

/** Builds `<name>_<version>_all.deb` in `dir` and returns its path. */
export function buildDeb(dir: string, pkg: DebPackage): string {
  const root = join(dir, `${pkg.name}-${pkg.version}`);
  mkdirSync(join(root, 'DEBIAN'), { recursive: true });
  writeFileSync(
    join(root, 'DEBIAN/control'),
    [
      `Package: ${pkg.name}`,
      `Version: ${pkg.version}`,
      'Architecture: all',
      'Maintainer: nuo tests <nuo@localhost>',
      'Description: a package whose installation needs a reboot, as a kernel update does',
      '',
    ].join('\n'),
  );
  writeFileSync(join(root, 'DEBIAN/postinst'), `#!/bin/sh\nset -e\n${pkg.postinst}\n`, { mode: 0o755 });
  const deb = join(dir, `${pkg.name}_${pkg.version}_all.deb`);
  execFileSync('dpkg-deb', ['--build', '--root-owner-group', root, deb], { stdio: 'pipe' });
  return deb;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** Writes a flat repository's Packages and Release for the .deb files (all in `dir`). */
export function writeFlatRepo(dir: string, debs: string[]): void {
  const stanzas = debs.map((deb) => {
    const control = execFileSync('dpkg-deb', ['--field', deb], { encoding: 'utf8' }).trim();
    const data = readFileSync(deb);
    return `${control}\nFilename: ./${basename(deb)}\nSize: ${data.length}\nSHA256: ${sha256(data)}\n`;
  });
  const packages = Buffer.from(stanzas.join('\n'));
  writeFileSync(join(dir, 'Packages'), packages);
  writeFileSync(
    join(dir, 'Release'),
    `Date: ${new Date().toUTCString()}\nSHA256:\n ${sha256(packages)} ${packages.length} Packages\n`,
  );
}

export interface RepoServer {
  port: number;
  /** Paths requested so far, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Serves `dir`'s files read-only over HTTP on 127.0.0.1. */
export async function serveRepo(dir: string): Promise<RepoServer> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    requests.push(path);
    const file = join(dir, path);
    if (!file.startsWith(dir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address !== 'object') throw new Error('the apt repository server has no port');
  return {
    port: address.port,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
