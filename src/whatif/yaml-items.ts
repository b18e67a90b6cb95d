/**
 * Large YAML lists, one item at a time. The YAML library builds a full syntax tree of what it parses —
 * near a hundred times the text in memory — so a 50,000-pod `kubectl get -o yaml` file parsed whole
 * would not fit; a List whose `items` are a block sequence (as kubectl and nuo write them) is cut into
 * its items by their lines, and each is parsed alone. Anything else is parsed whole.
 */

/** A piece of a YAML file: a document, or one item of a List's `items`. */
export interface YamlChunk {
  text: string;
  /** 1-based line of the chunk's first line in the file, for messages. */
  line: number;
}

/** A document of the file: its text with its List's items cut out (`items: []`), and those items. */
export interface YamlDocument {
  rest: YamlChunk;
  items: YamlChunk[];
}

const blankOrComment = (line: string) => line.trim() === '' || line.trimStart().startsWith('#');

/**
 * The documents of a YAML stream, split at `---` and `...` lines (at column 0 they can be nothing else);
 * undefined when a document starts on its marker's line ("--- {…}"), which only a parser can cut.
 */
export function splitDocuments(text: string): YamlChunk[] | undefined {
  const lines = text.split('\n');
  const docs: YamlChunk[] = [];
  let start = 0;
  const push = (end: number) => {
    const body = lines.slice(start, end);
    if (!body.every(blankOrComment)) docs.push({ text: body.join('\n'), line: start + 1 });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const marker = /^(---|\.\.\.)(\s.*)?$/.exec(line);
    if (!marker) continue;
    if (marker[1] === '---' && marker[2] && !blankOrComment(marker[2])) return undefined;
    push(i);
    start = i + 1;
  }
  push(lines.length);
  return docs;
}

/**
 * Cuts a document's top-level `items:` block sequence into its items: each entry starts with "- " at the
 * sequence's column and runs until the next entry or the first line indented less than its content.
 * A document without such a block comes back whole, with no items.
 */
export function cutItems(doc: YamlChunk): YamlDocument {
  const lines = doc.text.split('\n');
  const at = lines.findIndex((l) => /^items:\s*(#.*)?$/.test(l));
  const first = lines.findIndex((l, i) => i > at && !blankOrComment(l));
  const entry = at >= 0 && first >= 0 ? /^( *)-( |$)/.exec(lines[first] ?? '') : null;
  if (!entry) return { rest: doc, items: [] };
  const indent = entry[1]?.length ?? 0;
  const dash = new RegExp(`^ {${indent}}-( |$)`);
  const content = ' '.repeat(indent + 2);
  const items: YamlChunk[] = [];
  let current: string[] = [];
  let from = first;
  const close = () => {
    if (current.length > 0) items.push({ text: current.join('\n'), line: doc.line + from });
  };
  let end = first;
  for (; end < lines.length; end++) {
    const line = lines[end] ?? '';
    if (dash.test(line)) {
      close();
      from = end;
      // The entry's first key, moved to its content column and then out of it like the rest.
      current = [line.slice(indent + 2)];
    } else if (line.startsWith(content)) current.push(line.slice(indent + 2));
    else if (blankOrComment(line)) current.push('');
    else break;
  }
  close();
  return {
    rest: { text: [...lines.slice(0, at), 'items: []', ...lines.slice(end)].join('\n'), line: doc.line },
    items,
  };
}
