import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';

/** A port that was free a moment ago on 127.0.0.1 (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not allocate a loopback port'));
      });
    });
  });
}

export interface Tls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Only for health probes of our own loopback processes that serve self-signed certificates. */
  insecure?: boolean;
}

/** GET a URL and return status and body; never throws for HTTP errors, only for connection errors. */
export function get(url: string, tls: Tls = {}, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const isHttps = url.startsWith('https:');
    const options = isHttps
      ? { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: !tls.insecure, timeout: timeoutMs }
      : { timeout: timeoutMs };
    const req = (isHttps ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
