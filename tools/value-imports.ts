/**
 * The modules a module loads when run: the specifiers of its static `import` and `export … from`
 * statements that bring a value (or only run the module), leaving out the type-only ones, which
 * TypeScript erases. Dynamic `import()` is left out, as in import-cycles.ts.
 */

/** Each specifier, relative or a package's, in source order. */
export function valueImports(source: string): string[] {
  // Comments could hold an example import: blank them first (line comments only at a line's start).
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  const statement = /(?:^|[;\n])\s*(?:import|export)\s+(type\s+)?(?:([^'";]*?)\s+from\s+)?['"]([^'"]+)['"]/g;
  for (const m of code.matchAll(statement)) {
    const [, typeOnly, clause, specifier] = m;
    if (typeOnly !== undefined || (clause !== undefined && onlyTypes(clause))) continue;
    found.push(specifier as string);
  }
  return found;
}

/** `{ type A, type B }`: every name in the braces marked as a type. */
function onlyTypes(clause: string): boolean {
  const braces = /^\{([^}]*)\}$/.exec(clause.trim());
  if (braces === null) return false;
  const names = (braces[1] as string)
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length > 0 && names.every((n) => n.startsWith('type '));
}
