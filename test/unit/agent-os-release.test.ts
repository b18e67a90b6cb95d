import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LABEL_VALUE, osIdentity, parseOsRelease, toLabelValue } from '../../src/agent/os-release.ts';

test('parseOsRelease reads quoted, unquoted and escaped values and skips comments and junk', () => {
  const cases: Array<[string, string, Record<string, string>]> = [
    ['unquoted', 'ID=flatcar\nVERSION_ID=4081.2.0\n', { ID: 'flatcar', VERSION_ID: '4081.2.0' }],
    [
      'double quotes',
      'NAME="Flatcar Container Linux by Kinvolk"',
      { NAME: 'Flatcar Container Linux by Kinvolk' },
    ],
    ['single quotes', "ID='cos'\nVERSION_ID='113'", { ID: 'cos', VERSION_ID: '113' }],
    [
      'escapes in double quotes',
      'PRETTY_NAME="say \\"hi\\" \\$HOME \\\\ \\`x\\`"',
      { PRETTY_NAME: 'say "hi" $HOME \\ `x`' },
    ],
    ['comments and blank lines', '# a comment\n\n  # indented comment\nID=ubuntu\n', { ID: 'ubuntu' }],
    ['CRLF line ends', 'ID=debian\r\nVERSION_ID="12"\r\n', { ID: 'debian', VERSION_ID: '12' }],
    ['a later assignment wins', 'ID=a\nID=b', { ID: 'b' }],
    ['trailing comment after a value', 'ID=rhel # Red Hat', { ID: 'rhel' }],
    ['empty value', 'VARIANT_ID=', { VARIANT_ID: '' }],
    ['unterminated quote is skipped', 'ID="broken\nVERSION_ID=1', { VERSION_ID: '1' }],
    ['lines that are not assignments are skipped', 'garbage\n=x\n1ID=x\nID=ok', { ID: 'ok' }],
    ['mixed quoting concatenates like the shell', `ID=a"b c"'d'`, { ID: 'ab cd' }],
    [
      'equals signs inside values',
      'HOME_URL="https://x.example/?a=b"',
      { HOME_URL: 'https://x.example/?a=b' },
    ],
  ];
  for (const [name, text, expected] of cases) {
    assert.deepEqual(parseOsRelease(text), expected, name);
  }
});

test('toLabelValue yields valid label values', () => {
  const long = `${'a'.repeat(62)}-b`;
  const cases: Array<[string, string]> = [
    ['flatcar', 'flatcar'],
    ['4081.2.0', '4081.2.0'],
    ['22.04', '22.04'],
    ['rhel fedora', 'rhel-fedora'],
    ['opensuse-leap', 'opensuse-leap'],
    ['"quoted"', 'quoted'],
    ['  --x--  ', 'x'],
    ['.hidden.', 'hidden'],
    ['a/b:c', 'a-b-c'],
    ['a   b', 'a-b'],
    ['ünïcode-ß', 'n-code'],
    ['', ''],
    ['---', ''],
    [long, 'a'.repeat(62)],
    ['x'.repeat(100), 'x'.repeat(63)],
    [`${'y'.repeat(62)}.z`, 'y'.repeat(62)],
  ];
  for (const [raw, expected] of cases) {
    const value = toLabelValue(raw);
    assert.equal(value, expected, JSON.stringify(raw));
    assert.ok(
      value.length <= 63 && LABEL_VALUE.test(value),
      `${JSON.stringify(value)} is a valid label value`,
    );
  }
});

test('osIdentity: ID defaults to "linux", VERSION_ID to empty', () => {
  assert.deepEqual(osIdentity({ ID: 'flatcar', VERSION_ID: '4081.2.0' }), {
    id: 'flatcar',
    versionId: '4081.2.0',
  });
  assert.deepEqual(osIdentity({}), { id: 'linux', versionId: '' });
  assert.deepEqual(osIdentity({ ID: 'Arch Linux!', VERSION_ID: 'rolling release' }), {
    id: 'Arch-Linux',
    versionId: 'rolling-release',
  });
});
