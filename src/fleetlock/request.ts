/**
 * A FleetLock request as Zincati sends it (docs/decisions/0051-fleetlock.md): `POST /v1/pre-reboot` or
 * `POST /v1/steady-state`, header `fleet-lock-protocol: true`, JSON body `{"client_params": {"id", "group"}}`.
 * Anything else is refused in the protocol's error format, `{"kind", "value"}` with a non-2xx status.
 */

export const FleetLockOp = { preReboot: 'pre-reboot', steadyState: 'steady-state' } as const;
export type FleetLockOp = (typeof FleetLockOp)[keyof typeof FleetLockOp];

export interface FleetLockRequest {
  op: FleetLockOp;
  /** The client's node ID (Zincati: the app-specific ID of its machine ID, src/fleetlock/node-id.ts). */
  id: string;
  /** The client's reboot group: the name of the pool nuo coordinates it in. */
  group: string;
}

/** The protocol's error body, with the HTTP status it goes with. */
export interface FleetLockError {
  status: number;
  kind: string;
  value: string;
}

export const PROTOCOL_HEADER = 'fleet-lock-protocol';

/** The largest body nuo reads: Zincati's is under 200 bytes. */
export const MAX_BODY_BYTES = 4096;

const PATHS: Record<string, FleetLockOp> = {
  '/v1/pre-reboot': FleetLockOp.preReboot,
  '/v1/steady-state': FleetLockOp.steadyState,
};

export const isFleetLockError = (v: FleetLockRequest | FleetLockError): v is FleetLockError => 'kind' in v;

/** The request, or why it is not one nuo can answer. `header` is the fleet-lock-protocol header's value. */
export function parseRequest(
  method: string,
  path: string,
  header: string | undefined,
  body: string,
): FleetLockRequest | FleetLockError {
  const op = PATHS[path.split('?')[0] ?? ''];
  if (op === undefined)
    return {
      status: 404,
      kind: 'not_found',
      value: `no FleetLock endpoint at ${path}: use /v1/pre-reboot or /v1/steady-state`,
    };
  if (method !== 'POST')
    return { status: 405, kind: 'method_not_allowed', value: `${path} takes POST, not ${method}` };
  if (header?.trim().toLowerCase() !== 'true')
    return { status: 400, kind: 'missing_protocol_header', value: `set header ${PROTOCOL_HEADER}: true` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (err) {
    return { status: 400, kind: 'bad_json', value: `the body is not JSON (${(err as Error).message})` };
  }
  const params = (parsed as { client_params?: unknown } | null)?.client_params as
    | { id?: unknown; group?: unknown }
    | undefined;
  if (typeof params !== 'object' || params === null)
    return {
      status: 400,
      kind: 'bad_request',
      value: 'the body needs client_params: {"id": ..., "group": ...}',
    };
  const { id, group } = params;
  if (typeof id !== 'string' || id.trim() === '')
    return { status: 400, kind: 'bad_request', value: 'client_params.id must be a non-empty string' };
  if (typeof group !== 'string' || group.trim() === '')
    return { status: 400, kind: 'bad_request', value: 'client_params.group must be a non-empty string' };
  return { op, id: id.trim().toLowerCase(), group: group.trim() };
}
