/**
 * The reflector loop: afterWatch's decisions as a table, then Reflector over scripted list and watch
 * functions (what it lists, where each watch starts, when it backs off). The informer and the agent run
 * it against a real control plane in test/integration/kube-informer.test.ts and agent-watch.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { LogLevel } from '../../src/kube/backoff.ts';
import {
  type Attempt,
  type AttemptEnd,
  afterWatch,
  type Listed,
  type Next,
  Reflector,
  type ReflectorOptions,
  type Versioned,
} from '../../src/kube/reflector.ts';

test('afterWatch: what follows each way an attempt can end', () => {
  // Defaults: a watch started at 0 that ran until `now`, 4 failures before it, a version to resume from.
  const base: Attempt = {
    end: 'ended',
    listed: false,
    watchStartedAt: 0,
    events: 0,
    now: 0,
    failures: 4,
    resumable: true,
  };
  const rows: Array<{
    what: string;
    attempt: Partial<Attempt> & { end: AttemptEnd };
    relistAfterFailure?: boolean;
    want: [Next['step'], number, boolean];
  }> = [
    {
      what: 'ended after events: watch again at once',
      attempt: { end: 'ended', events: 3, now: 5 },
      want: ['watch', 0, false],
    },
    {
      what: 'ended after healthyMs without events (the server timeout of a quiet watch)',
      attempt: { end: 'ended', now: 10_000 },
      want: ['watch', 0, false],
    },
    {
      what: 'ended at once without an event: a failure',
      attempt: { end: 'ended', now: 5 },
      want: ['watch', 5, true],
    },
    {
      what: 'ended before healthyMs without an event, right after a list: a failure',
      attempt: { end: 'ended', listed: true, now: 9_999 },
      want: ['watch', 5, true],
    },
    {
      what: 'silent, the connection answers: watch again at once',
      attempt: { end: 'silent', now: 1_000 },
      want: ['watch', 4, false],
    },
    {
      what: 'silent after healthyMs: the streak ends',
      attempt: { end: 'silent', now: 90_000 },
      want: ['watch', 0, false],
    },
    {
      what: 'dead connection after a long silence: first backoff',
      attempt: { end: 'dead', now: 90_000 },
      want: ['watch', 1, true],
    },
    {
      what: 'dead connection after a short watch: the streak grows',
      attempt: { end: 'dead', now: 1_000 },
      want: ['watch', 5, true],
    },
    {
      what: '410 on a version from an earlier attempt: list at once',
      attempt: { end: 'gone', now: 5 },
      want: ['list', 4, false],
    },
    {
      what: "410 at once on a fresh list's version: list again after a backoff",
      attempt: { end: 'gone', listed: true, now: 5 },
      want: ['list', 5, true],
    },
    {
      what: "410 after a healthy watch from a fresh list's version: list at once",
      attempt: { end: 'gone', listed: true, events: 2, now: 60_000 },
      want: ['list', 0, false],
    },
    {
      what: 'failure during a healthy watch: first backoff, then watch from the last version',
      attempt: { end: 'failed', events: 7, now: 60_000 },
      want: ['watch', 1, true],
    },
    {
      what: 'failure at once: the streak grows',
      attempt: { end: 'failed', now: 5 },
      want: ['watch', 5, true],
    },
    {
      what: 'failure, for a caller that lists after failures',
      attempt: { end: 'failed', events: 7, now: 60_000 },
      relistAfterFailure: true,
      want: ['list', 1, true],
    },
    {
      what: 'failed list: no watch started, nothing to resume from',
      attempt: { end: 'failed', watchStartedAt: undefined, resumable: false },
      want: ['list', 5, true],
    },
    {
      what: 'failure with nothing to resume from',
      attempt: { end: 'failed', now: 5, resumable: false },
      want: ['list', 5, true],
    },
  ];
  for (const { what, attempt, relistAfterFailure = false, want } of rows) {
    const [step, failures, backoff] = want;
    assert.deepEqual(
      afterWatch({ ...base, ...attempt }, { healthyMs: 10_000, relistAfterFailure }),
      { step, failures, backoff },
      what,
    );
  }
});

interface Obj extends Versioned {
  name?: string;
}

/** One watch call: its events ([type, resourceVersion]), then how it ends. */
interface Step {
  events?: Array<[string, string]>;
  /** 'hang': until its signal aborts; 'deaf': never, whatever its signal does. */
  end: 'end' | 'gone' | 'fail' | 'hang' | 'deaf';
}

const GONE = Object.assign(new Error('410 Gone'), { status: 410 });

/**
 * Scripted list and watch functions: lists return `lists` in turn (the last one again when they run
 * out; an Error throws), watches play `steps` in turn, then hang. `trace` records every call.
 */
function scripted(lists: Array<string | Error>, steps: Step[]) {
  const trace: string[] = [];
  let listCalls = 0;
  let watchCalls = 0;
  let reachedEnd: () => void = () => {};
  const exhausted = new Promise<void>((resolve) => {
    reachedEnd = resolve;
  });
  const list = async (): Promise<Listed> => {
    const r = lists[Math.min(listCalls++, lists.length - 1)] as string | Error;
    if (r instanceof Error) {
      trace.push(`list failed: ${r.message}`);
      throw r;
    }
    trace.push(`list ${r}`);
    return { resourceVersion: r };
  };
  const watch = async (
    rv: string | undefined,
    onEvent: (type: string, obj: Obj) => void,
    signal: AbortSignal,
  ): Promise<void> => {
    trace.push(`watch ${rv}`);
    const step = steps[watchCalls++] ?? { end: 'hang' };
    if (watchCalls >= steps.length) reachedEnd();
    await new Promise((r) => setImmediate(r));
    for (const [type, version] of step.events ?? [])
      onEvent(type, { metadata: { resourceVersion: version } });
    if (step.end === 'end') return;
    if (step.end === 'gone') throw GONE;
    if (step.end === 'fail') throw new Error('connection reset');
    if (step.end === 'deaf') return new Promise<void>(() => {});
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  };
  return { list, watch, trace, exhausted };
}

interface Logged {
  level: LogLevel;
  msg: string;
  failures: unknown;
  delayMs: unknown;
}

function reflectorOver(
  fake: ReturnType<typeof scripted>,
  options: Partial<ReflectorOptions<Obj>> = {},
): { reflector: Reflector<Obj>; logs: Logged[]; seen: string[] } {
  const logs: Logged[] = [];
  const seen: string[] = [];
  const reflector = new Reflector<Obj>({
    name: 'things',
    list: fake.list,
    watch: fake.watch,
    onEvent: (type, obj) => seen.push(`${type} ${obj.metadata?.resourceVersion}`),
    isGone: (err) => (err as { status?: number }).status === 410,
    backoff: { initialMs: 1, maxMs: 4 },
    log: (level, msg, fields) =>
      logs.push({ level, msg, failures: fields?.failures, delayMs: fields?.delayMs }),
    ...options,
  });
  return { reflector, logs, seen };
}

/** Runs the reflector until the script is played out (and `extra` holds), then stops it. */
async function play(
  reflector: Reflector<Obj>,
  fake: ReturnType<typeof scripted>,
  extra: () => boolean = () => true,
): Promise<void> {
  const stop = new AbortController();
  const running = reflector.run(stop.signal);
  await fake.exhausted;
  const deadline = Date.now() + 5_000;
  while (!extra() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  stop.abort();
  await running;
}

test('watches from the list, then from the last version seen; only 410 lists again, at once', async () => {
  const fake = scripted(
    ['10', '20'],
    [
      {
        events: [
          ['ADDED', '11'],
          ['BOOKMARK', '12'],
        ],
        end: 'end',
      },
      { events: [['MODIFIED', '13']], end: 'end' },
      { end: 'gone' },
      { end: 'hang' },
    ],
  );
  const { reflector, logs, seen } = reflectorOver(fake);
  await play(reflector, fake);
  assert.deepEqual(fake.trace, ['list 10', 'watch 10', 'watch 12', 'watch 13', 'list 20', 'watch 20']);
  assert.deepEqual(seen, ['ADDED 11', 'BOOKMARK 12', 'MODIFIED 13'], 'bookmarks reach the caller too');
  assert.deepEqual(reflector.stats(), { lists: 2, watches: 4, failures: 0, silences: 0, events: 3 });
  assert.equal(reflector.resourceVersion, '20');
  const gone = logs.filter((l) => l.msg.includes('410'));
  assert.deepEqual(
    gone.map((l) => [l.level, l.msg, l.delayMs]),
    [['info', 'things: resourceVersion expired (410 Gone); listing again', 0]],
  );
});

test('after a failure it backs off and watches again from the last version seen; a streak ends only with a healthy watch', async () => {
  const fake = scripted(
    ['10', '20', '30'],
    [
      { events: [['ADDED', '11']], end: 'fail' }, // healthy (an event), then failed: backoff 1
      { end: 'fail' }, // at once: backoff 2
      { end: 'end' }, // ended at once without an event: backoff 3
      { end: 'gone' }, // 410 on an old version: list at once, the streak stays
      { end: 'gone' }, // 410 at once on the fresh list's version: backoff 4
      { end: 'hang' },
    ],
  );
  const { reflector, logs } = reflectorOver(fake);
  await play(reflector, fake);
  assert.deepEqual(fake.trace, [
    'list 10',
    'watch 10',
    'watch 11',
    'watch 11',
    'watch 11',
    'list 20',
    'watch 20',
    'list 30',
    'watch 30',
  ]);
  assert.deepEqual(
    logs.map((l) => [l.level, l.failures, (l.delayMs as number) > 0]),
    [
      ['warn', 1, true],
      ['warn', 2, true],
      ['warn', 3, true],
      ['info', 3, false],
      ['info', 4, true],
    ],
  );
  assert.match(logs[0]?.msg ?? '', /^things: connection reset; watching again in \d+ ms \(failure 1\)$/);
  assert.match(
    logs[2]?.msg ?? '',
    /^things: the watch ended at once with no events; watching again in \d+ ms$/,
  );
  assert.equal(reflector.stats().failures, 2, 'a 410 or a watch that ended is not counted as a failure');
});

test('relistAfterFailure: a failure lists again', async () => {
  const fake = scripted(['10', '20'], [{ events: [['ADDED', '11']], end: 'fail' }, { end: 'hang' }]);
  const { reflector } = reflectorOver(fake, { relistAfterFailure: true });
  await play(reflector, fake);
  assert.deepEqual(fake.trace, ['list 10', 'watch 10', 'list 20', 'watch 20']);
});

test('a failed list is listed again after a backoff, also when it was answered 410', async () => {
  const fake = scripted([GONE, new Error('refused'), '10'], [{ end: 'hang' }]);
  const { reflector, logs } = reflectorOver(fake);
  await play(reflector, fake);
  assert.deepEqual(fake.trace, ['list failed: 410 Gone', 'list failed: refused', 'list 10', 'watch 10']);
  assert.deepEqual(
    logs.map((l) => [l.level, l.failures, (l.delayMs as number) > 0]),
    [
      ['warn', 1, true],
      ['warn', 2, true],
    ],
  );
  assert.match(logs[0]?.msg ?? '', /^things: 410 Gone; listing again in \d+ ms \(failure 1\)$/);
});

test('a failure its owner expects (a CRD not installed) is retried the same, logged at debug only', async () => {
  const missing = new Error('not installed');
  const fake = scripted([missing, missing, '10'], [{ end: 'hang' }]);
  const { reflector, logs } = reflectorOver(fake, { expected: (err) => err === missing });
  await play(reflector, fake);
  assert.deepEqual(fake.trace, [
    'list failed: not installed',
    'list failed: not installed',
    'list 10',
    'watch 10',
  ]);
  assert.deepEqual(
    logs.map((l) => [l.level, l.failures]),
    [
      ['debug', 1],
      ['debug', 2],
    ],
  );
});

test('the list is applied once the reflector is at its version; an apply that throws fails the attempt', async () => {
  const applied: Array<string | undefined> = [];
  let throwOnce = true;
  const fake = scripted(['10', '20'], [{ end: 'hang' }]);
  const { reflector, logs } = reflectorOver(fake, {
    list: async () => {
      const listed = await fake.list();
      return {
        ...listed,
        apply: () => {
          applied.push(reflector.resourceVersion);
          if (throwOnce) {
            throwOnce = false;
            throw new Error('cache refused the list');
          }
        },
      };
    },
  });
  await play(reflector, fake);
  assert.deepEqual(applied, ['10', '20']);
  assert.deepEqual(fake.trace, ['list 10', 'list 20', 'watch 20']);
  assert.match(logs[0]?.msg ?? '', /cache refused the list; listing again/);
});

test('the watchdog cuts a silent watch, even one deaf to its signal, and watches again without listing', async () => {
  const fake = scripted(
    ['10'],
    [{ events: [['ADDED', '11']], end: 'deaf' }, { end: 'deaf' }, { end: 'deaf' }, { end: 'hang' }],
  );
  const answers = [true, false, true];
  const { reflector, logs } = reflectorOver(fake, {
    watchdog: { afterMs: 30, probe: async () => answers.shift() ?? true },
  });
  await play(reflector, fake);
  assert.deepEqual(fake.trace, ['list 10', 'watch 10', 'watch 11', 'watch 11', 'watch 11']);
  assert.equal(reflector.stats().silences, 3);
  assert.equal(reflector.stats().lists, 1, 'silence alone never costs a list');
  assert.deepEqual(
    logs.map((l) => [l.level, l.msg.replace(/\d+ ms$/, 'N ms'), l.failures]),
    [
      ['info', 'things: no event or bookmark for 30 ms; watching again', 0],
      [
        'warn',
        'things: no event or bookmark for 30 ms and the connection did not answer; watching again in N ms',
        1,
      ],
      ['info', 'things: no event or bookmark for 30 ms; watching again', 1],
    ],
  );
});

test('a throwing event handler is logged; the watch goes on and its version still advances', async () => {
  const fake = scripted(
    ['10'],
    [
      {
        events: [
          ['ADDED', '11'],
          ['MODIFIED', '12'],
        ],
        end: 'end',
      },
      { end: 'hang' },
    ],
  );
  const { reflector, logs } = reflectorOver(fake, {
    onEvent: (type) => {
      if (type === 'ADDED') throw new Error('handler bug');
    },
  });
  await play(reflector, fake);
  assert.deepEqual(fake.trace, ['list 10', 'watch 10', 'watch 12']);
  assert.ok(
    logs.some((l) => l.level === 'error' && l.msg === 'things: handling a ADDED event failed: handler bug'),
  );
  assert.equal(reflector.stats().events, 2);
});

test('stop ends run() during a watch deaf to its signal and during a backoff, and no event is handled after it', async () => {
  let emit: ((type: string, obj: Obj) => void) | undefined;
  const seen: string[] = [];
  const deaf = new Reflector<Obj>({
    name: 'things',
    list: async () => ({ resourceVersion: '1' }),
    watch: (_rv, onEvent) => {
      emit = onEvent;
      return new Promise<void>(() => {});
    },
    onEvent: (type) => seen.push(type),
    isGone: () => false,
    backoff: { initialMs: 1, maxMs: 1 },
  });
  const stop = new AbortController();
  const running = deaf.run(stop.signal);
  while (!emit) await new Promise((r) => setTimeout(r, 1));
  emit('ADDED', {});
  stop.abort();
  await running;
  emit('MODIFIED', {});
  assert.deepEqual(seen, ['ADDED']);

  const failing = new Reflector<Obj>({
    name: 'things',
    list: async () => {
      throw new Error('refused');
    },
    watch: async () => {},
    onEvent: () => {},
    isGone: () => false,
    backoff: { initialMs: 60_000, maxMs: 60_000 },
  });
  const stopFailing = new AbortController();
  const started = Date.now();
  const runningFailing = failing.run(stopFailing.signal);
  await new Promise((r) => setTimeout(r, 20));
  stopFailing.abort();
  await runningFailing;
  assert.ok(Date.now() - started < 5_000, 'not after the minute of backoff');
});

test('the reflector and the agent load nothing of @kubernetes/client-node', () => {
  // The agent must stay lean: that library costs ~130 MiB to load.
  for (const module of ['src/kube/reflector.ts', 'src/agent/agent.ts', 'src/cli/agent.ts']) {
    const url = new URL(`../../${module}`, import.meta.url).href;
    const probe = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({
        resolve(specifier, context, next) {
          const r = next(specifier, context);
          if (r.url.includes('/node_modules/')) loaded.push(r.url);
          return r;
        },
      });
      await import(${JSON.stringify(url)});
      console.log(JSON.stringify(loaded));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', probe], {
      cwd: fileURLToPath(new URL('../../', import.meta.url)),
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, `${module}: ${r.stderr}`);
    const loaded = JSON.parse(r.stdout) as string[];
    assert.deepEqual(
      loaded.filter((u) => u.includes('/@kubernetes/client-node/')),
      [],
      `${module} loads @kubernetes/client-node`,
    );
  }
});
