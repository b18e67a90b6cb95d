/**
 * Where a runaway Node process was, before it is killed: its diagnostic report when its event loop still
 * turns (heap, handles, native stack); else every thread's native stack (gdb, when the machine has it:
 * a loop stuck in native code answers neither the report's signal nor the inspector) and the JavaScript
 * stack, read by pausing it through the inspector, which interrupts running JavaScript from a thread of
 * its own.
 * The process must have been started with `diagnosisFlags()`; it writes the inspector's address to its
 * stderr, which the caller logs to `logPath`.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describeError } from '../kube/errors.ts';
import { pollUntil } from '../util/poll.ts';

const REPORT_WAIT_MS = 3000;
const INSPECTOR_WAIT_MS = 5000;
const GDB_TIMEOUT_MS = 30_000;
const FRAMES = 30;

/** Node flags for a process that diagnose() may be asked about. */
export function diagnosisFlags(reportDir: string, reportFile: string): string[] {
  return [
    '--report-on-signal',
    '--report-signal=SIGUSR2',
    `--report-directory=${reportDir}`,
    `--report-filename=${reportFile}`,
    // SIGUSR1 opens the inspector; port 0, so processes side by side never collide.
    '--inspect-port=127.0.0.1:0',
  ];
}

interface DiagnosticReport {
  javascriptStack?: { message?: string; stack?: string[] };
  nativeStack?: Array<{ symbol?: string }>;
  javascriptHeap?: { totalMemory?: number };
  libuv?: unknown[];
}

/** The report once written in full (the file appears when Node starts writing it). */
function readReport(path: string): DiagnosticReport | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as DiagnosticReport;
  } catch {
    return undefined;
  }
}

function describeReport(r: DiagnosticReport, path: string): string {
  return [
    `diagnostic report (${path}): the event loop turns; JavaScript heap ${Math.round((r.javascriptHeap?.totalMemory ?? 0) / 2 ** 20)} MiB, ${r.libuv?.length ?? 0} libuv handles`,
    'native stack:',
    ...(r.nativeStack ?? []).slice(0, FRAMES).map((f) => `  ${f.symbol ?? '?'}`),
  ].join('\n');
}

interface CallFrame {
  functionName: string;
  url: string;
  location: { lineNumber: number; columnNumber: number };
}

/** Pauses the process through its inspector and returns the JavaScript stack it was paused in. */
async function pausedStack(child: ChildProcess, logPath: string): Promise<string> {
  const before = readFileSync(logPath, 'utf8').length;
  child.kill('SIGUSR1');
  const url = await pollUntil(
    'the inspector to listen',
    () =>
      readFileSync(logPath, 'utf8')
        .slice(before)
        .match(/Debugger listening on (ws:\/\/\S+)/)?.[1],
    { timeoutMs: INSPECTOR_WAIT_MS, intervalMs: 50 },
  );
  const ws = new WebSocket(url);
  try {
    const frames = await new Promise<CallFrame[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no Debugger.paused event')), INSPECTOR_WAIT_MS);
      ws.onerror = () => reject(new Error(`cannot connect to ${url}`));
      ws.onopen = () => {
        ws.send(JSON.stringify({ id: 1, method: 'Debugger.enable' }));
        ws.send(JSON.stringify({ id: 2, method: 'Debugger.pause' }));
      };
      ws.onmessage = (e) => {
        const msg = JSON.parse(String(e.data)) as { method?: string; params?: { callFrames: CallFrame[] } };
        if (msg.method !== 'Debugger.paused') return;
        clearTimeout(timer);
        resolve(msg.params?.callFrames ?? []);
      };
    });
    return [
      'JavaScript stack (paused through the inspector: the event loop was stuck):',
      ...frames
        .slice(0, FRAMES)
        .map(
          (f) =>
            `  at ${f.functionName || '(anonymous)'} (${f.url}:${f.location.lineNumber + 1}:${f.location.columnNumber + 1})`,
        ),
    ].join('\n');
  } finally {
    ws.close();
  }
}

/** Each thread's name and CPU seconds so far (/proc/PID/task/TID/stat): which one spins. */
function threadTimes(pid: number): string {
  const tick = 100; // USER_HZ on Linux
  const lines = readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = (Number(fields[11]) + Number(fields[12])) / tick;
    return `  ${tid} ${name}: ${cpu.toFixed(2)} s CPU, state ${fields[0]}`;
  });
  return ['threads:', ...lines].join('\n');
}

/** Every thread's native stack, by attaching gdb for a moment (the process continues after). */
async function nativeStacks(pid: number): Promise<string> {
  const { stdout } = await promisify(execFile)(
    'gdb',
    ['-p', String(pid), '-batch', '-nx', '-ex', 'set pagination off', '-ex', `thread apply all bt ${FRAMES}`],
    { timeout: GDB_TIMEOUT_MS, maxBuffer: 16 * 2 ** 20 },
  );
  const stacks = stdout.split('\n').filter((l) => /^(Thread |#\d)/.test(l));
  return ['native stacks (gdb):', ...stacks.map((l) => `  ${l.slice(0, 240)}`)].join('\n');
}

/** Asks the process where it is (see the module's comment); never throws, says what it could not get. */
export async function diagnose(child: ChildProcess, reportPath: string, logPath: string): Promise<string> {
  child.kill('SIGUSR2');
  const report = await pollUntil('the diagnostic report', () => readReport(reportPath), {
    timeoutMs: REPORT_WAIT_MS,
    intervalMs: 100,
  }).catch(() => undefined);
  if (report) return describeReport(report, reportPath);
  const pid = child.pid ?? 0;
  const parts = [`no diagnostic report within ${REPORT_WAIT_MS} ms: the event loop is stuck`];
  const attempt = async (what: string, get: () => Promise<string> | string) => {
    try {
      parts.push(await get());
    } catch (err) {
      parts.push(`no ${what}: ${describeError(err)}`);
    }
  };
  await attempt('thread times', () => threadTimes(pid));
  await attempt('native stacks', () => nativeStacks(pid));
  await attempt('JavaScript stack', () => pausedStack(child, logPath));
  return parts.join('\n');
}
