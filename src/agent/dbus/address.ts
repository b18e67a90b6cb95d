/**
 * D-Bus server addresses (https://dbus.freedesktop.org/doc/dbus-specification.html#addresses), reduced to
 * what the agent needs: one `unix:path=…` or `tcp:host=…,port=…` address. Parsed and checked up front so a
 * bad address is a clear configuration error at start-up rather than a confusing connection failure later.
 */

export const DEFAULT_SYSTEM_BUS_ADDRESS = 'unix:path=/run/dbus/system_bus_socket';

export type BusAddress =
  | { readonly transport: 'unix'; readonly path: string }
  | { readonly transport: 'tcp'; readonly host: string; readonly port: number };

/** The system bus address: the explicit one, else DBUS_SYSTEM_BUS_ADDRESS, else the standard socket. */
export function systemBusAddress(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined) return explicit;
  const fromEnv = env.DBUS_SYSTEM_BUS_ADDRESS;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_SYSTEM_BUS_ADDRESS;
}

function invalid(address: string, why: string): Error {
  return new Error(`invalid D-Bus address ${JSON.stringify(address)}: ${why}`);
}

function unescapeValue(address: string, value: string): string {
  // Values are %-escaped byte strings; anything else is taken literally (the spec's "optionally escaped").
  try {
    return decodeURIComponent(value);
  } catch {
    throw invalid(address, `bad %-escape in ${JSON.stringify(value)}`);
  }
}

/** Parses and validates one D-Bus address; throws an Error naming the address and what is wrong with it. */
export function parseBusAddress(address: string): BusAddress {
  if (typeof address !== 'string' || address.trim() === '') throw invalid(String(address), 'empty');
  if (address.includes(';')) throw invalid(address, 'lists of addresses are not supported; give exactly one');
  const colon = address.indexOf(':');
  if (colon <= 0)
    throw invalid(address, 'expected "transport:key=value,…", e.g. unix:path=/run/dbus/system_bus_socket');
  const transport = address.slice(0, colon);
  const params = new Map<string, string>();
  const rest = address.slice(colon + 1);
  for (const pair of rest === '' ? [] : rest.split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw invalid(address, `expected key=value, got ${JSON.stringify(pair)}`);
    const key = pair.slice(0, eq);
    if (params.has(key)) throw invalid(address, `key ${JSON.stringify(key)} given twice`);
    params.set(key, unescapeValue(address, pair.slice(eq + 1)));
  }
  if (transport === 'unix') {
    if (params.has('abstract')) {
      throw invalid(address, 'abstract sockets need the native "usocket" module, which nuo does not ship');
    }
    const path = params.get('path');
    if (path === undefined) throw invalid(address, 'a unix address needs path=…');
    if (!path.startsWith('/')) throw invalid(address, `socket path ${JSON.stringify(path)} is not absolute`);
    // dbus-next splits addresses on these characters without unescaping, so it could not use such a path.
    if (/[:,;=]/.test(path))
      throw invalid(address, 'socket paths containing ":", ",", ";" or "=" are not supported');
    const unknown = [...params.keys()].filter((k) => k !== 'path' && k !== 'guid');
    if (unknown.length > 0) throw invalid(address, `unsupported key(s) ${unknown.join(', ')}`);
    return { transport: 'unix', path };
  }
  if (transport === 'tcp') {
    const host = params.get('host') ?? 'localhost';
    const portText = params.get('port');
    if (portText === undefined) throw invalid(address, 'a tcp address needs port=…');
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      throw invalid(address, `port ${JSON.stringify(portText)} is not an integer in 1..65535`);
    }
    if (/[:,;=]/.test(host)) throw invalid(address, `unsupported host ${JSON.stringify(host)}`);
    const unknown = [...params.keys()].filter((k) => !['host', 'port', 'family', 'guid'].includes(k));
    if (unknown.length > 0) throw invalid(address, `unsupported key(s) ${unknown.join(', ')}`);
    return { transport: 'tcp', host, port };
  }
  throw invalid(
    address,
    `unsupported transport ${JSON.stringify(transport)} (use unix:path=… or tcp:host=…,port=…)`,
  );
}

/** The address in the plain form dbus-next understands (it does not unescape values). */
export function formatBusAddress(address: BusAddress): string {
  return address.transport === 'unix'
    ? `unix:path=${address.path}`
    : `tcp:host=${address.host},port=${address.port}`;
}
