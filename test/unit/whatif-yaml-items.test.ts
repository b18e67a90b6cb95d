import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { cutItems, splitDocuments } from '../../src/whatif/yaml-items.ts';

test('splitDocuments: at --- and ... lines, empty and comment-only documents left out, lines kept', () => {
  const cases: { name: string; text: string; want: { line: number; text: string }[] | undefined }[] = [
    { name: 'one document', text: 'a: 1\nb: 2\n', want: [{ line: 1, text: 'a: 1\nb: 2\n' }] },
    {
      name: 'markers, an empty and a comment-only document',
      text: '---\na: 1\n---\n---\n# nothing\n...\nb: 2\n--- # note\nc: 3',
      want: [
        { line: 2, text: 'a: 1' },
        { line: 7, text: 'b: 2' },
        { line: 9, text: 'c: 3' },
      ],
    },
    { name: 'a document on its marker line', text: 'a: 1\n--- {b: 2}\n', want: undefined },
    {
      name: 'a marker inside a block scalar is indented',
      text: 'a: |\n  ---\n  x\n',
      want: [{ line: 1, text: 'a: |\n  ---\n  x\n' }],
    },
  ];
  for (const c of cases) assert.deepEqual(splitDocuments(c.text), c.want, c.name);
});

/** kubectl's layout: entries at column 0; nuo's and the yaml library's: indented by 2. */
const LISTS = {
  kubectl: [
    'apiVersion: v1',
    'items:',
    '- apiVersion: v1',
    '  kind: Pod',
    '  metadata:',
    '    name: a',
    '  spec:',
    '    text: |',
    '      - not an entry',
    '',
    '      items:',
    '# a comment at column 0',
    '- apiVersion: v1',
    '  kind: Pod',
    '  metadata: {name: b}',
    'kind: List',
    'metadata:',
    '  resourceVersion: ""',
  ].join('\n'),
  indented: [
    'kind: List',
    'items:',
    '  - kind: Pod',
    '    metadata:',
    '      name: a',
    '  -',
    '    kind: Pod',
    '    metadata: {name: b}',
    'metadata: {}',
  ].join('\n'),
};

test('cutItems: each entry of a List alone, as the whole document parses it, and the rest without them', () => {
  for (const [layout, text] of Object.entries(LISTS)) {
    const { rest, items } = cutItems({ text, line: 10 });
    const whole = parse(text) as { items: unknown[] };
    assert.deepEqual(
      items.map((i) => parse(i.text)),
      whole.items,
      layout,
    );
    assert.deepEqual({ ...(parse(rest.text) as object), items: whole.items }, whole, layout);
    assert.equal(items[0]?.line, 12, `${layout}: the first entry's line in the file`);
  }
  const kubectl = cutItems({ text: LISTS.kubectl, line: 1 });
  assert.equal(kubectl.items[1]?.line, 13);
});

test('cutItems leaves whole what is not a block sequence under a top-level items key', () => {
  for (const text of [
    'kind: List\nitems: []\n',
    'kind: Pod\nspec:\n  items:\n  - a\n',
    'items:\n  a: 1\n',
    'kind: List\nitems:\n',
  ]) {
    const cut = cutItems({ text, line: 1 });
    assert.deepEqual(cut, { rest: { text, line: 1 }, items: [] }, text);
  }
});
