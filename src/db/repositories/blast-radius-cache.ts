import { eq } from 'drizzle-orm';
import type { Db } from '../client.js';
import { topologyVersions } from '../schema/topology.js';
import { blastRadius, type BlastRadius } from './topology.js';

/**
 * Blast radius answers cached per process, keyed by the tenant's topology version: every change
 * to a tenant's services or edges moves the version in its own transaction (database triggers),
 * so an answer is served only while the graph it was computed on is still the committed graph,
 * on every api process. Each call costs one primary-key read of the version; a miss runs the
 * recursive query. Least recently used answers are dropped past about `maxBytes`.
 */
export class BlastRadiusCache {
  private readonly entries = new Map<string, { version: number; body: string; bytes: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  /**
   * The answer as JSON text (a large blast radius is hundreds of kilobytes: serialising it on
   * every call would cost more than the lookup), or undefined when the tenant has no such service.
   */
  async get(db: Db, tenantId: string, serviceId: string): Promise<string | undefined> {
    const [row] = await db
      .select({ version: topologyVersions.version })
      .from(topologyVersions)
      .where(eq(topologyVersions.tenantId, tenantId));
    const version = row?.version ?? 0;
    const key = `${tenantId}\u0000${serviceId}`;
    const hit = this.entries.get(key);
    if (hit && hit.version === version) {
      this.entries.delete(key); // move to the most recently used end
      this.entries.set(key, hit);
      return hit.body;
    }
    const result: BlastRadius | undefined = await blastRadius(db, tenantId, serviceId);
    if (!result) return undefined;
    const body = JSON.stringify(result);
    this.put(key, { version, body, bytes: 2 * body.length });
    return body;
  }

  private put(key: string, entry: { version: number; body: string; bytes: number }): void {
    const old = this.entries.get(key);
    if (old) {
      this.bytes -= old.bytes;
      this.entries.delete(key);
    }
    if (entry.bytes > this.maxBytes) return;
    this.entries.set(key, entry);
    this.bytes += entry.bytes;
    for (const [oldest, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= value.bytes;
    }
  }
}
