import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { imageConfig, LAYERS } from '../../tools/image/spec.ts';

const root = new URL('../../', import.meta.url);
const containerfile = readFileSync(new URL('Containerfile', root), 'utf8');
const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string };

/** The final stage's instructions, continuation lines joined, comments dropped. */
function finalStage(text: string): Array<{ op: string; arg: string }> {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const from = lines.findLastIndex((l) => l.startsWith('FROM '));
  return lines.slice(from).map((l) => {
    const [op = '', ...rest] = l.split(/\s+/);
    return { op, arg: rest.join(' ') };
  });
}

const stage = finalStage(containerfile);
const one = (op: string) => {
  const found = stage.filter((i) => i.op === op);
  assert.equal(found.length, 1, `one ${op} in the final stage`);
  return found[0]?.arg ?? '';
};

test("the Containerfile's image has npm run image's configuration (tools/image/spec.ts)", () => {
  const want = imageConfig({ version: '$VERSION', revision: '$REVISION', created: '$CREATED' });
  assert.equal(one('FROM'), 'scratch');
  assert.equal(one('USER'), want.user);
  assert.equal(one('WORKDIR'), want.workingDir);
  assert.deepEqual(JSON.parse(one('ENTRYPOINT')), want.entrypoint);
  assert.deepEqual(JSON.parse(one('CMD')), want.cmd);
  assert.deepEqual([one('ENV')], want.env);
  const labels = Object.fromEntries(
    [...one('LABEL').matchAll(/([\w.]+)="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]),
  );
  assert.deepEqual(labels, want.labels);
});

test("the Containerfile copies the staged layers in the same order, and its VERSION is package.json's", () => {
  const copies = stage.filter((i) => i.op === 'COPY').map((i) => i.arg);
  assert.deepEqual(
    copies,
    LAYERS.map((l) => `--from=stage /stage/${l}/ /`),
  );
  assert.ok(
    stage.some((i) => i.op === 'ARG' && i.arg === `VERSION=${version}`),
    `ARG VERSION=${version}`,
  );
  assert.match(containerfile, /RUN NUO_REVISION="\$REVISION" node tools\/image\/stage\.ts \/stage\n/);
});
