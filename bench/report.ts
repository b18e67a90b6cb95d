/**
 * Benchmark reports: each script prints its figures and writes them into its own section of
 * docs/benchmarks.md, with the machine, the versions, the date and the command that reproduces them, so
 * the published figures are always the latest measured ones and never typed by hand.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

const docPath = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

const HEADER = `# Benchmarks

Every section below is written by the script that measured it (\`bench/\`), with the machine, versions and
the command that reproduces it. Re-running a script replaces its section; nothing here is typed by hand.
Goals come from the issues; a figure that misses its goal says so.
`;

export interface Versions {
  kubernetes?: string;
  etcd?: string;
  kwok?: string;
}

function goVersion(): string {
  try {
    return execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }).trim();
  } catch {
    return 'go unavailable';
  }
}

/** One line naming the machine and every version a figure depends on. */
export function environment(versions: Versions = {}): string {
  const cpu = cpus();
  const parts = [
    `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}`,
    `${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
    `Linux ${release()}`,
    `Node ${process.versions.node}`,
    goVersion(),
  ];
  if (versions.kubernetes) parts.push(`Kubernetes ${versions.kubernetes}`);
  if (versions.etcd) parts.push(`etcd ${versions.etcd}`);
  if (versions.kwok) parts.push(`KWOK ${versions.kwok}`);
  return parts.join(' · ');
}

/** Replaces (or appends) the section `id` of `text`; sections are delimited by HTML comments. */
export function replaceSection(text: string, id: string, body: string): string {
  const begin = `<!-- bench:${id} -->`;
  const end = `<!-- /bench:${id} -->`;
  const block = `${begin}\n${body.trim()}\n${end}`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) return `${text.slice(0, from)}${block}${text.slice(to + end.length)}`;
  return `${text.trimEnd()}\n\n${block}\n`;
}

export interface Report {
  /** Section id in docs/benchmarks.md, e.g. `rollout-200`. */
  id: string;
  title: string;
  /** Markdown: the figures (usually a table) and any notes. */
  body: string;
  /** The command that reproduces the figures. */
  command: string;
  versions?: Versions;
}

/**
 * Prints the report and writes it into docs/benchmarks.md (unless NUO_BENCH_NO_WRITE=1, for trial runs
 * that must not replace the published figures).
 */
export function publish(r: Report): void {
  const date = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const section = [
    `## ${r.title}`,
    '',
    `Measured ${date} UTC on ${environment(r.versions)}.`,
    '',
    r.body.trim(),
    '',
    `Reproduce: \`${r.command}\``,
  ].join('\n');
  process.stdout.write(`\n${section}\n\n`);
  if (process.env.NUO_BENCH_NO_WRITE === '1') return;
  const current = existsSync(docPath) ? readFileSync(docPath, 'utf8') : HEADER;
  writeFileSync(docPath, replaceSection(current, r.id, section));
  process.stdout.write(`(written to docs/benchmarks.md, section ${r.id})\n`);
}
