/**
 * The GitHub Actions workflows under .github/workflows, checked by actionlint (built from its Go module
 * by tools/actionlint/build.ts): syntax, expressions, action inputs and the shell of each step. The release
 * workflow publishes with the same command the release test runs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ensureActionlint } from '../../tools/actionlint/build.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const actionlint = await ensureActionlint();
const work = mkdtempSync(join(tmpdir(), 'nuo-workflows-test-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** actionlint over workflow files; shellcheck off (not a Debian package the project installs). */
const lint = (files: string[]) =>
  spawnSync(actionlint, ['-no-color', '-shellcheck=', ...files], { encoding: 'utf8', timeout: 120_000 });

describe('GitHub Actions workflows', () => {
  test('actionlint finds nothing wrong in .github/workflows', () => {
    const dir = join(root, '.github/workflows');
    const files = readdirSync(dir);
    assert.ok(files.includes('release.yml'), 'the release workflow is there');
    const r = lint(files.map((f) => join(dir, f)));
    assert.equal(r.status, 0, `actionlint:\n${r.stdout}${r.stderr}`);
  });

  test('actionlint refuses a workflow with an unknown expression and a missing key, saying where', () => {
    const file = join(work, 'broken.yml');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not JavaScript's
    writeFileSync(file, 'on: push\njobs:\n  x:\n    steps:\n      - run: echo ${{ github.no_such_field }}\n');
    const r = lint([file]);
    assert.equal(r.status, 1, `actionlint:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /broken\.yml:\d+:\d+: .*"runs-on" section is missing/);
    assert.match(r.stdout, /no_such_field/);
  });

  test("the release workflow publishes with npm run release:publish, the release test's tools/release/publish.ts", () => {
    const workflow = parse(readFileSync(join(root, '.github/workflows/release.yml'), 'utf8')) as {
      jobs: Record<string, { steps: { run?: string; env?: Record<string, string> }[] }>;
    };
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.equal(pkg.scripts['release:publish'], 'node tools/release/publish.ts');
    const steps = Object.values(workflow.jobs).flatMap((j) => j.steps);
    const publish = steps.find((s) => s.run?.includes('npm run release:publish'));
    assert.ok(publish, 'a step runs npm run release:publish');
    assert.match(publish.run ?? '', /--key env:\/\/COSIGN_PRIVATE_KEY/);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not JavaScript's
    assert.equal(publish.env?.COSIGN_PRIVATE_KEY, '${{ secrets.COSIGN_PRIVATE_KEY }}');
  });
});
