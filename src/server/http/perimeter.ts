import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

/**
 * Who may talk to a local `serve`, checked on every request and WebSocket upgrade before
 * anything else, as local development servers (webpack-dev-server, Vite) do:
 *
 * - `Host` must name this machine the loopback way (`localhost`, `*.localhost`, a loopback
 *   or any other IP address), be the `host` the server binds to, or be listed in
 *   `allowedHosts`. DNS rebinding needs a host *name* that resolves to us, so IP addresses
 *   are safe to accept and serving on 0.0.0.0 by address keeps working.
 * - `Origin`, when present (browsers send it), must be a loopback origin or be listed in
 *   `allowedOrigins`: a page elsewhere on the web cannot use the public demo keys against a
 *   developer's serve. Non-browser clients send no Origin and are not affected.
 */
export interface PerimeterOptions {
  /** The address the server binds to; a name given here is accepted as a Host. */
  bindHost: string;
  /** More Host names; a leading dot allows every subdomain. `'all'` turns the Host check off. */
  allowedHosts: readonly string[] | 'all';
  /** Exact origins (`https://app.example.com:8443`) allowed besides loopback ones; `'*'` allows any. */
  allowedOrigins: readonly string[];
}

export type Refusal = { status: 403; reason: string };

const LOOPBACK_IPV4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** A loopback name or address: `localhost`, `*.localhost`, `127.x.x.x`, `::1` with or without brackets. */
export function isLoopbackName(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname === '[::1]' ||
    hostname === '::1' ||
    LOOPBACK_IPV4.test(hostname)
  );
}

/** The host name of a `Host` header value, lower-case, without the port (`[::1]` keeps its brackets). */
function hostnameOf(hostHeader: string): string {
  const lower = hostHeader.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}

/** An allowed host as given (`Dev.Example:8787`, `::1`) in the form hostnameOf gives. */
function allowedName(host: string): string {
  const lower = host.trim().toLowerCase();
  return lower.startsWith('.') || isIP(lower) === 6 ? lower : hostnameOf(lower);
}

function unbracketed(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

export function normalizeOrigin(origin: string): string {
  if (origin === '*') return origin;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new TypeError(`allowed origin must be a URL such as http://localhost:5173, got "${origin}"`);
  }
  if (url.origin === 'null') throw new TypeError(`allowed origin must be an http(s) origin, got "${origin}"`);
  return url.origin;
}

export function createPerimeter(options: PerimeterOptions): (headers: IncomingHttpHeaders) => Refusal | undefined {
  const allowedHosts =
    options.allowedHosts === 'all' ? undefined : new Set([options.bindHost, ...options.allowedHosts].map(allowedName));
  const anyOrigin = options.allowedOrigins.includes('*');
  const allowedOrigins = new Set(options.allowedOrigins.map(normalizeOrigin));

  function hostAllowed(hostHeader: string | undefined): boolean {
    // HTTP/1.0 clients send no Host; a browser always does.
    if (allowedHosts === undefined || hostHeader === undefined) return true;
    const hostname = hostnameOf(hostHeader);
    if (isLoopbackName(hostname) || isIP(unbracketed(hostname)) !== 0) return true;
    if (allowedHosts.has(hostname) || allowedHosts.has(unbracketed(hostname))) return true;
    for (const allowed of allowedHosts) {
      if (allowed.startsWith('.') && (hostname.endsWith(allowed) || hostname === allowed.slice(1))) return true;
    }
    return false;
  }

  function originAllowed(origin: string | undefined): boolean {
    if (origin === undefined || anyOrigin) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    // `null` (sandboxed frames, file:// pages) has no host to trust.
    if (url.origin === 'null') return false;
    return isLoopbackName(url.hostname) || allowedOrigins.has(url.origin);
  }

  return (headers) => {
    if (!hostAllowed(headers.host)) {
      return { status: 403, reason: 'this Host is not allowed; add it with --allowed-hosts (allowedHosts)' };
    }
    const origin = headers.origin;
    if (!originAllowed(Array.isArray(origin) ? origin[0] : origin)) {
      return {
        status: 403,
        reason: 'requests from this Origin are not allowed; add it with --allow-origin (allowedOrigins)',
      };
    }
    return undefined;
  };
}

/** A token that fits in an Authorization header as it is: printable ASCII, no spaces. */
export function isValidToken(token: string): boolean {
  return /^[\x21-\x7e]+$/.test(token);
}
