/**
 * nuo's FleetLock server: node:http at the edge, every answer decided by answer.ts. Only the leader
 * answers (its cache and its writes are the ones that count); a follower refuses with 503 `not_leader`,
 * which a FleetLock client retries like any refusal (docs/decisions/0051-fleetlock.md).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
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

/** Serves FleetLock on `port` until closed. */
export function serveFleetLock(port: number, backend: FleetLockBackend, log: FleetLockLog): Server {
  return createServer((req, res) => {
    void (async () => {
      const header = req.headers[PROTOCOL_HEADER];
      const a = await handle(
        backend,
        {
          method: req.method ?? '',
          url: req.url ?? '',
          header: Array.isArray(header) ? header[0] : header,
          body: await body(req),
        },
        () => new Date(),
        log,
      );
      send(res, a);
    })().catch((err: unknown) => {
      log('error', 'FleetLock request failed', { error: (err as Error).message });
      if (!res.headersSent) send(res, { status: 500, kind: 'internal', value: (err as Error).message });
    });
  }).listen(port);
}
