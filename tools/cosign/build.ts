/**
 * Builds cosign (sigstore's signer, github.com/sigstore/cosign/v3 at the version the go.mod beside this
 * file pins) into a cache outside the repository, keyed by the module's files, so a second run returns at
 * once. The release test signs and verifies the image and the chart with it; the release workflow too.
 *
 *   node tools/cosign/build.ts          build it if it is missing, with progress
 *   node tools/cosign/build.ts --print  print the binary's path and exit (no build)
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandMain, ensureCommand, type PinnedCommand } from '../go-build.ts';

export const COSIGN: PinnedCommand = {
  name: 'cosign',
  moduleDir: dirname(fileURLToPath(import.meta.url)),
  modulePath: 'github.com/sigstore/cosign/v3',
  pkg: 'github.com/sigstore/cosign/v3/cmd/cosign',
  // As its Makefile links it: its version for `cosign version`.
  ldflags: (version) => `-s -w -X sigs.k8s.io/release-utils/version.gitVersion=${version}`,
};

export const ensureCosign = (log?: (line: string) => void) => ensureCommand(COSIGN, log);

if (import.meta.url === `file://${process.argv[1]}`) await commandMain(COSIGN);
