import { lookup as dnsLookup, LookupAddress, LookupOptions } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A request to a customer's server: outbound webhooks and the workflow WEBHOOK step. */
export interface OutboundRequest {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, string>;
  body?: string;
  /** Whole request, connect to last byte read. */
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE: private, loopback and link-local targets allowed. */
  allowPrivate: boolean;
  /** How much of the response body to keep (the rest is not read). */
  maxBodyBytes: number;
}

export interface OutboundResponse {
  status: number;
  /** The first maxBodyBytes of the body, as UTF-8. */
  body: string;
}

/** The target is not allowed (a private address, a bad scheme): retrying will not help. */
export class RefusedTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedTargetError';
  }
}

/**
 * Only ordinary public unicast addresses: not private (10/8, 172.16/12,
 * 192.168/16, fc00::/7), loopback, link-local (169.254/16 with the cloud
 * metadata address, fe80::/10), carrier-grade NAT, multicast, unspecified,
 * reserved, nor IPv6 forms that embed an IPv4 address (mapped, 6to4, Teredo,
 * NAT64), which could carry any of those.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv6') {
    // IPv4-compatible (::a.b.c.d, deprecated): ipaddr.js calls it unicast, and URLs write
    // [::127.0.0.1] as [::7f00:1], so judge the IPv4 address it carries.
    const parts = (parsed as ipaddr.IPv6).parts;
    if (parts.slice(0, 6).every((part) => part === 0)) {
      const v4 = ipaddr.fromByteArray((parsed as ipaddr.IPv6).toByteArray().slice(12));
      return v4.range() === 'unicast';
    }
  }
  return parsed.range() === 'unicast';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * dns.lookup that refuses non-public answers: the address checked is the one
 * the socket then connects to, so a name that resolves differently the
 * second time (DNS rebinding) cannot slip through.
 */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '');
    const list = addresses as LookupAddress[];
    const blocked = list.find((a) => !isPublicAddress(a.address));
    if (blocked || list.length === 0) {
      return callback(
        refused(
          `${hostname} resolves to ${blocked?.address ?? 'nothing'}, which is not a public address`,
        ),
        '',
      );
    }
    if (options.all) return callback(null, list);
    callback(null, list[0].address, list[0].family);
  });
}

function refused(message: string): NodeJS.ErrnoException {
  return new RefusedTargetError(message) as NodeJS.ErrnoException;
}

const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 256 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

/**
 * One HTTP(S) request with the SSRF guard: the resolved address must be
 * public unless `allowPrivate`; redirects are answered as they are (3xx),
 * never followed; the whole exchange times out after `timeoutMs`. Throws
 * RefusedTargetError for a refused target, another Error for network
 * failures and timeouts.
 */
export function sendOutbound(request: OutboundRequest): Promise<OutboundResponse> {
  let target: Target;
  try {
    target = targetOf(request.url);
  } catch (error) {
    return Promise.reject(error);
  }
  if (!request.allowPrivate && target.literalIp && !isPublicAddress(target.host)) {
    return Promise.reject(new RefusedTargetError(`${target.host} is not a public address`));
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null, response?: OutboundResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(response as OutboundResponse);
    };
    const req = target.transport.request(
      {
        ...target.options,
        method: request.method,
        headers:
          request.body !== undefined
            ? { ...request.headers, 'content-length': Buffer.byteLength(request.body) }
            : request.headers,
        lookup: request.allowPrivate ? undefined : (guardedLookup as unknown as typeof dnsLookup),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < request.maxBodyBytes)
            chunks.push(chunk.subarray(0, request.maxBodyBytes - size));
          size += chunk.length;
        });
        res.on('end', () =>
          settle(null, {
            status: res.statusCode ?? 0,
            body: chunks.length === 0 ? '' : Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', (error) => settle(error));
      },
    );
    // One timer for the whole exchange (an AbortSignal per request cost a quarter of the client's CPU in bench:webhooks).
    const timer = setTimeout(() => {
      const error = new Error(`no complete answer within ${request.timeoutMs} ms`);
      error.name = 'TimeoutError';
      req.destroy(error);
    }, request.timeoutMs);
    req.on('error', (error: Error) => {
      // The guard's refusal reaches here wrapped by the socket: keep its type.
      settle(
        error instanceof RefusedTargetError
          ? error
          : error.cause instanceof RefusedTargetError
            ? error.cause
            : error,
      );
    });
    req.end(request.body);
  });
}

/** A URL parsed once into what node:http needs (targets repeat: an endpoint's every delivery). */
interface Target {
  transport: typeof http | typeof https;
  host: string;
  literalIp: boolean;
  options: http.RequestOptions;
}

const targets = new Map<string, Target>();
const TARGETS_CACHED = 1000;

function targetOf(raw: string): Target {
  const cached = targets.get(raw);
  if (cached) return cached;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedTargetError('not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new RefusedTargetError(`${url.protocol} URLs are not allowed`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const https_ = url.protocol === 'https:';
  const target: Target = {
    transport: https_ ? https : http,
    host,
    literalIp: isIP(host) !== 0,
    options: {
      protocol: url.protocol,
      hostname: host,
      port: url.port || (https_ ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      agent: agents[url.protocol as 'http:' | 'https:'],
      ...(url.username || url.password
        ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
        : {}),
    },
  };
  if (targets.size >= TARGETS_CACHED) targets.clear();
  targets.set(raw, target);
  return target;
}
