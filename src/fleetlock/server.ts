/**
 * nuo's FleetLock server: node:http at the edge, every answer decided by answer.ts. Only the leader
 * answers (its cache and its writes are the ones that count); a follower forwards the request to the
 * leader's FleetLock URL (advertised on its Lease) and relays the answer, so a Service that selects every
 * replica answers every client; a follower that cannot refuses with 503 `not_leader`, which a FleetLock
 * client retries like any refusal, but only after its own period (docs/decisions/0051-fleetlock.md).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { FleetLockKeys } from '../api/keys.ts';
import { answer, type FleetLockAnswer, type FleetLockNode, FleetLockWrite } from './answer.ts';
import {
  type FleetLockError,
  isFleetLockError,
  MAX_BODY_BYTES,
  PROTOCOL_HEADER,
  parseRequest,
} from './request.ts';

/** The operator as the FleetLock server uses it. */
export interface FleetLockBackend {
  /** Why this replica may not answer now (it does not lead); undefined when it may. */
  refusal(): string | undefined;
  /** Where the leading replica's FleetLock server answers, when another replica leads and says so. */
  leader(): string | undefined;
  /** The nodes whose machine ID derives `id`, as the operator reads them. */
  nodes(id: string): FleetLockNode[];
  /** Writes the handler's annotations on the node, null removing one (throws when it fails). */
  annotate(node: string, annotations: Record<string, string | null>): Promise<void>;
}

export type FleetLockLog = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

/**
 * What each record writes: a pre-reboot removes the steady-state, so "asked and not answered since" is
 * read from which keys are there, never by comparing two times (two leaders' clocks may have written
 * them); the times are for people.
 */
const WRITE_OF: Record<FleetLockWrite, (at: string) => Record<string, string | null>> = {
  [FleetLockWrite.need]: (at) => ({ [FleetLockKeys.preReboot]: at, [FleetLockKeys.steadyState]: null }),
  [FleetLockWrite.steadyState]: (at) => ({ [FleetLockKeys.steadyState]: at }),
};

/** Reads the body up to MAX_BODY_BYTES; undefined when it is larger. */
async function body(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, a: FleetLockAnswer | FleetLockError): void {
  if (a.status === 200) {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    return;
  }
  const { kind, value } = a as FleetLockError;
  res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify({ kind, value }));
}

/** One request's answer, with the write it asks for made first (a write that fails is a 503: ask again). */
export async function handle(
  backend: FleetLockBackend,
  req: { method: string; url: string; header: string | undefined; body: string | undefined },
  now: () => Date,
  log: FleetLockLog,
): Promise<FleetLockAnswer | FleetLockError> {
  if (req.body === undefined)
    return { status: 413, kind: 'body_too_large', value: `the body is over ${MAX_BODY_BYTES} bytes` };
  const parsed = parseRequest(req.method, req.url, req.header, req.body);
  if (isFleetLockError(parsed)) return parsed;
  const refused = backend.refusal();
  if (refused !== undefined)
    return { status: 503, kind: 'not_leader', value: `${refused}: ask again (the leader answers)` };
  const a = answer(parsed, backend.nodes(parsed.id));
  if (a.record !== undefined && a.node !== undefined) {
    try {
      await backend.annotate(a.node, WRITE_OF[a.record](now().toISOString()));
    } catch (err) {
      log('warn', 'FleetLock request not recorded', {
        node: a.node,
        op: parsed.op,
        error: (err as Error).message,
      });
      return {
        status: 503,
        kind: 'not_recorded',
        value: `the ${parsed.op} request of node ${a.node} could not be recorded (${(err as Error).message}): ask again`,
      };
    }
  }
  log('info', 'FleetLock request', { node: a.node, op: parsed.op, group: parsed.group, status: a.status });
  return a;
}

/** Set on a request a follower forwards: the leader never forwards it again (no loop between replicas). */
export const FORWARDED_HEADER = 'nuo-fleetlock-forwarded-by';
/** How long a follower waits for the leader's answer: below a FleetLock client's own request timeout. */
export const FORWARD_TIMEOUT_MS = 20_000;
/**
 * How long a replica that does not lead waits to learn the leader (it reads the Lease every retry period;
 * a replica just started has not yet) before it refuses: far less than a client's period, which a refusal
 * costs.
 */
export const LEADER_WAIT_MS = 5_000;

export type Route = { kind: 'answer' } | { kind: 'forward'; to: string } | { kind: 'refuse' };

/** Whether this replica answers, forwards to the leader, or refuses (pure). */
export function route(refusal: string | undefined, forwarded: boolean, leader: string | undefined): Route {
  if (refusal === undefined) return { kind: 'answer' };
  if (forwarded || leader === undefined) return { kind: 'refuse' };
  return { kind: 'forward', to: leader };
}

/** The leader's answer to a forwarded request, relayed as it is; a 503 `not_leader` if none came. */
async function forward(
  to: string,
  req: { method: string; url: string; header: string | undefined; body: string },
  by: string,
  stopping: AbortSignal,
): Promise<{ status: number; body: string }> {
  if (stopping.aborted) return SHUTTING_DOWN;
  try {
    const res = await fetch(new URL(req.url, to), {
      method: req.method,
      headers: {
        'content-type': 'application/json',
        [FORWARDED_HEADER]: by,
        ...(req.header === undefined ? {} : { [PROTOCOL_HEADER]: req.header }),
      },
      body: req.body,
      signal: AbortSignal.any([AbortSignal.timeout(FORWARD_TIMEOUT_MS), stopping]),
    });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    if (stopping.aborted) return SHUTTING_DOWN;
    const value = `this replica does not lead and the leader's FleetLock server at ${to} did not answer (${(err as Error).message}): ask again`;
    return { status: 503, body: JSON.stringify({ kind: 'not_leader', value }) };
  }
}

/**
 * The leader's answer when this replica does not lead: forwarded to the leader it read on the Lease, and
 * while none is known, or the leader itself refused (a leader whose renewal is late refuses until it
 * renews), looked again until LEADER_WAIT_MS has passed. Undefined: this replica answers (it leads, or the
 * wait is over: then its own refusal).
 */
async function viaLeader(
  backend: FleetLockBackend,
  forwarded: boolean,
  request: { method: string; url: string; header: string | undefined; body: string | undefined },
  identity: string,
  log: FleetLockLog,
  stopping: AbortSignal,
): Promise<{ status: number; body: string } | undefined> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  for (;;) {
    const to = route(backend.refusal(), forwarded, backend.leader());
    if (to.kind === 'answer' || request.body === undefined) return undefined;
    if (to.kind === 'forward') {
      const relayed = await forward(to.to, { ...request, body: request.body }, identity, stopping);
      if (relayed.status !== 503 || Date.now() >= deadline || stopping.aborted) {
        if (relayed.status === 503) log('warn', 'FleetLock request not forwarded', { to: to.to, ...relayed });
        return relayed;
      }
    } else if (Date.now() >= deadline) return undefined;
    await sleep(200, undefined, { signal: stopping }).catch(() => {});
    if (stopping.aborted) return SHUTTING_DOWN;
  }
}

/** What a replica that is shutting down answers a request it has not answered yet: ask again. */
const SHUTTING_DOWN = {
  status: 503,
  body: JSON.stringify({ kind: 'not_leader', value: 'this replica is shutting down: ask again' }),
};

/**
 * Serves FleetLock on `port` until `stopping` aborts; `identity` names this replica on the requests it
 * forwards. Then it takes no new connection, answers a relay still waiting on the leader with 503 at once
 * (a forward may wait FORWARD_TIMEOUT_MS, longer than a pod's grace), and closes each connection after its
 * answer: nothing it serves keeps the process from exiting.
 */
export function serveFleetLock(options: {
  port: number;
  backend: FleetLockBackend;
  log: FleetLockLog;
  identity?: string;
  stopping: AbortSignal;
}): Server {
  const { backend, log, stopping } = options;
  const identity = options.identity ?? 'a follower';
  const server = createServer((req, res) => {
    void (async () => {
      const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h);
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        header: first(req.headers[PROTOCOL_HEADER]),
        body: await body(req),
      };
      const forwarded = req.headers[FORWARDED_HEADER] !== undefined;
      const relayed = await viaLeader(backend, forwarded, request, identity, log, stopping);
      if (stopping.aborted) res.shouldKeepAlive = false;
      if (relayed) {
        res.writeHead(relayed.status, { 'content-type': 'application/json' }).end(relayed.body);
        return;
      }
      send(res, await handle(backend, request, () => new Date(), log));
    })().catch((err: unknown) => {
      log('error', 'FleetLock request failed', { error: (err as Error).message });
      if (!res.headersSent) send(res, { status: 500, kind: 'internal', value: (err as Error).message });
    });
  });
  const close = () => {
    server.close();
    server.closeIdleConnections();
  };
  if (stopping.aborted) close();
  else {
    stopping.addEventListener('abort', close, { once: true });
    server.listen(options.port);
  }
  return server;
}
