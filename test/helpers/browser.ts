/**
 * A browser for OAuth flows over real HTTP: it follows redirects by hand, keeps cookies per
 * origin and path (HttpOnly, expiry and Max-Age honoured), and can reach a logical origin (the
 * api's public base URL, `http://api.test`) at a real address.
 */

interface Cookie {
  name: string;
  value: string;
  origin: string;
  path: string;
  expiresAt: number | null;
}

export interface Page {
  status: number;
  /** The URL this answer came from (logical origin), or the external target a redirect stopped at. */
  url: string;
  headers: Headers;
  text: string;
  /** JSON bodies, parsed. */
  json: any;
  /** Set when a redirect left for an origin this browser does not reach (a redirect_to target). */
  stoppedAt?: string;
}

export class Browser {
  private cookies: Cookie[] = [];
  /** Every URL requested, in order (logical). */
  readonly visited: string[] = [];

  constructor(
    /** Logical origin → real origin (`http://api.test` → `http://127.0.0.1:PORT`). */
    private readonly aliases: Record<string, string>,
    /** Origins this browser may reach (the providers'); others end a redirect chain. */
    private readonly reachable: string[],
  ) {}

  private reaches(url: URL): boolean {
    return url.origin in this.aliases || this.reachable.includes(url.origin);
  }

  cookieNames(origin: string): string[] {
    return this.cookies.filter((c) => c.origin === origin).map((c) => c.name);
  }

  /** Removes every cookie of an origin named `name` (a browser whose cookie was lost). */
  dropCookie(origin: string, name: string): void {
    this.cookies = this.cookies.filter((c) => !(c.origin === origin && c.name === name));
  }

  private cookieHeader(url: URL): string {
    const now = Date.now();
    this.cookies = this.cookies.filter((c) => c.expiresAt === null || c.expiresAt > now);
    return this.cookies
      .filter(
        (c) =>
          c.origin === url.origin && (url.pathname === c.path || url.pathname.startsWith(c.path.replace(/\/?$/, '/'))),
      )
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  private store(url: URL, headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';').map((p) => p.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expiresAt: number | null = null;
      for (const attribute of attributes) {
        const [key, v = ''] = attribute.split('=');
        const k = key!.toLowerCase();
        if (k === 'path') path = v;
        if (k === 'max-age') expiresAt = Date.now() + Number(v) * 1000;
        if (k === 'expires' && expiresAt === null) expiresAt = Date.parse(v);
      }
      this.cookies = this.cookies.filter((c) => !(c.origin === url.origin && c.name === name && c.path === path));
      if (expiresAt === null || expiresAt > Date.now())
        this.cookies.push({ name, value, origin: url.origin, path, expiresAt });
    }
  }

  /** One request, no redirect followed. */
  async request(target: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Page> {
    const url = new URL(target);
    this.visited.push(url.toString());
    const real = new URL(url.toString());
    const alias = this.aliases[url.origin];
    if (alias) {
      const a = new URL(alias);
      real.protocol = a.protocol;
      real.host = a.host;
    }
    const headers: Record<string, string> = {};
    const cookie = this.cookieHeader(url);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const method = init.method ?? (init.form ? 'POST' : 'GET');
    const response = await fetch(real, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
      redirect: 'manual',
    });
    this.store(url, response.headers);
    const text = await response.text();
    let json: unknown;
    if (response.headers.get('content-type')?.includes('json') && text) json = JSON.parse(text);
    return { status: response.status, url: url.toString(), headers: response.headers, text, json };
  }

  /**
   * A request, then its redirects (at most 20) while they stay on origins this browser reaches
   * (and `stopAt` does not hold).
   */
  async navigate(
    target: string,
    init: { method?: string; form?: Record<string, string>; stopAt?: (url: URL) => boolean } = {},
  ): Promise<Page> {
    let page = await this.request(target, init);
    for (let hops = 0; hops < 20; hops++) {
      const location = page.headers.get('location');
      if (page.status < 300 || page.status >= 400 || !location) return page;
      const next = new URL(location, page.url);
      if (!this.reaches(next) || init.stopAt?.(next)) return { ...page, stoppedAt: next.toString() };
      page = await this.request(next.toString());
    }
    throw new Error(`too many redirects from ${target}`);
  }
}
