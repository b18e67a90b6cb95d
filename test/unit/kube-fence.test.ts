/**
 * The fence (src/kube/fence.ts): which requests it drops, and that it drops them at the moment they
 * would leave, after waiting in the pool's queue — checked on the wire, through a real undici Agent to a
 * plain HTTP listener that records what reaches it.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { Agent, request } from 'undici';
import { Fence, FencedError, fenceVerdict, isFenced } from '../../src/kube/fence.ts';

test('fenceVerdict: an ended attempt drops everything; not leading drops every change, never a read', () => {
  const ended = AbortSignal.abort();
  const live = new AbortController().signal;
  const cases: Array<[string, string | undefined, AbortSignal | undefined, string | undefined]> = [
    ['GET', undefined, undefined, undefined],
    ['POST', undefined, live, undefined],
    ['GET', 'not leading', undefined, undefined],
    ['HEAD', 'not leading', live, undefined],
    ['POST', 'not leading', undefined, 'not leading'],
    ['patch', 'not leading', undefined, 'not leading'],
    ['PUT', 'not leading', live, 'not leading'],
    ['DELETE', 'not leading', undefined, 'not leading'],
    ['GET', undefined, ended, 'its attempt has ended'],
    ['POST', 'not leading', ended, 'its attempt has ended'],
  ];
  for (const [method, notLeading, attempt, want] of cases) {
    assert.equal(
      fenceVerdict(method, notLeading, attempt),
      want,
      `${method} ${notLeading} ${attempt?.aborted}`,
    );
  }
});

/** Requests that reached the listener, in order; each held until `release()` when `hold` is set. */
const seen: string[] = [];
let holding: Array<() => void> = [];
let hold = false;
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  seen.push(`${req.method} ${req.url}`);
  const answer = () => res.end('ok');
  if (hold) holding.push(answer);
  else answer();
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
after(() => server.close());

function release() {
  hold = false;
  for (const answer of holding) answer();
  holding = [];
}

test('isFenced: a FencedError, or an error caused by one (a client wraps it), and nothing else', () => {
  const fenced = new FencedError('not leading');
  assert.equal(isFenced(fenced), true);
  assert.equal(isFenced(new TypeError('fetch failed', { cause: fenced })), true);
  assert.equal(isFenced(new Error('outer', { cause: new Error('inner', { cause: fenced }) })), true);
  assert.equal(isFenced(new Error('request not sent: not leading')), false, 'by its class, not its words');
  assert.equal(isFenced('not leading'), false);
  const loop = new Error('a');
  loop.cause = loop;
  assert.equal(isFenced(loop), false, 'a cause that loops ends');
});

test('a change is not sent while the guard says this replica does not lead; reads are', async () => {
  seen.length = 0;
  let leading = true;
  const fence = new Fence(() => (leading ? undefined : 'not leading'));
  const agent = new Agent({ connections: 1 }).compose(fence.interceptor);
  try {
    await request(`${origin}/a`, { method: 'POST', dispatcher: agent, body: 'x' }).then((r) => r.body.text());
    leading = false;
    await assert.rejects(
      request(`${origin}/b`, { method: 'POST', dispatcher: agent, body: 'x' }),
      (err: Error) => err instanceof FencedError && /not leading/.test(err.message),
    );
    await request(`${origin}/c`, { method: 'GET', dispatcher: agent }).then((r) => r.body.text());
    assert.deepEqual(seen, ['POST /a', 'GET /c']);
  } finally {
    await agent.destroy();
  }
});

test('a request queued behind a busy connection is dropped if its attempt ends while it waits', async () => {
  seen.length = 0;
  const fence = new Fence(() => undefined);
  const agent = new Agent({ connections: 1 }).compose(fence.interceptor);
  try {
    hold = true;
    // The first request holds the only connection; the attempt's request queues behind it.
    const first = request(`${origin}/first`, { method: 'GET', dispatcher: agent });
    const attempt = new AbortController();
    const queued = fence.run(attempt.signal, () =>
      request(`${origin}/eviction`, { method: 'POST', dispatcher: agent, body: 'x' }),
    );
    // The first has reached the listener: the queued one has not left the process yet.
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    attempt.abort();
    release();
    await (await first).body.text();
    await assert.rejects(
      queued,
      (err: Error) => err instanceof FencedError && /attempt has ended/.test(err.message),
    );
    // Outside the attempt, the same connection carries requests as before.
    await request(`${origin}/after`, { method: 'GET', dispatcher: agent }).then((r) => r.body.text());
    assert.deepEqual(seen, ['GET /first', 'GET /after']);
  } finally {
    release();
    await agent.destroy();
  }
});
