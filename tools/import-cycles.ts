/**
 * Import circles among TypeScript modules: the graph of their static `import … from './x.ts'` and
 * `export … from './x.ts'` statements (type-only ones too: a circle of types still ties the modules
 * together), and its strongly connected components of more than one module (or a module importing
 * itself). Dynamic `import()` is left out: it is how a module loads another only when run.
 */
import { dirname, join, normalize } from 'node:path';

/** The relative specifiers of a module's static imports and re-exports, in source order. */
export function relativeImports(source: string): string[] {
  // Comments could hold an example import: blank them first (line comments only at a line's start, so
  // that a URL inside a string keeps its `//`).
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  const statement =
    /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const m of code.matchAll(statement)) found.push(m[1] as string);
  return found;
}

/** Each module (a path relative to the root) and the modules it imports, resolved the same way. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** The graph of `files` (path → source), keeping only edges to modules among them. */
export function importGraph(files: ReadonlyMap<string, string>): ImportGraph {
  const graph = new Map<string, string[]>();
  for (const [path, source] of files) {
    const targets = relativeImports(source)
      .map((spec) => normalize(join(dirname(path), spec)))
      .filter((target) => files.has(target));
    graph.set(path, [...new Set(targets)]);
  }
  return graph;
}

/**
 * The import circles: each a sorted list of the modules that reach each other, sorted by their first
 * module (Tarjan's strongly connected components, iterative so that a deep chain cannot overflow).
 */
export function importCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; edge: number };
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++] as string;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(to) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || edges.includes(frame.node)) cycles.push(component.sort());
    }
  }
  return cycles.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}
