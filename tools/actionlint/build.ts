/**
 * Builds actionlint (github.com/rhysd/actionlint at the version the go.mod beside this file pins), which
 * checks GitHub Actions workflows, into a cache outside the repository, keyed by the module's files, so a
 * second run returns at once. test/unit/release-workflow.test.ts runs it over .github/workflows.
 *
 *   node tools/actionlint/build.ts          build it if it is missing, with progress
 *   node tools/actionlint/build.ts --print  print the binary's path and exit (no build)
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandMain, ensureCommand, type PinnedCommand } from '../go-build.ts';

export const ACTIONLINT: PinnedCommand = {
  name: 'actionlint',
  moduleDir: dirname(fileURLToPath(import.meta.url)),
  modulePath: 'github.com/rhysd/actionlint',
  pkg: 'github.com/rhysd/actionlint/cmd/actionlint',
  // As its release build links it: its version for `actionlint -version`.
  ldflags: (version) => `-s -w -X github.com/rhysd/actionlint.version=${version}`,
};

export const ensureActionlint = (log?: (line: string) => void) => ensureCommand(ACTIONLINT, log);

if (import.meta.url === `file://${process.argv[1]}`) await commandMain(ACTIONLINT);
