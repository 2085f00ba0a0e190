import type postgres from 'postgres';
import { AppError } from '../errors.js';
import { DEPENDENCY_UNAVAILABLE_MESSAGE, isDependencyUnavailable } from '../dependency-failures.js';
import type { IngestOutcome, IngestRequest } from './ingest.js';
import { writeBatch } from './write-batch.js';

interface Pending {
  request: IngestRequest;
  /** When it was submitted (`performance.now()`): a delivery waits for a batch `timeoutMs` at most. */
  submittedAt: number;
  resolve: (outcome: IngestOutcome) => void;
  reject: (err: unknown) => void;
}

export interface IngestBatcherLimits {
  /** Deliveries and events per batch. */
  maxDeliveries: number;
  maxEvents: number;
  /**
   * How long a batch may take before its deliveries are answered 503: the database is then
   * unreachable or stuck, and the next batch goes ahead on another connection. The stuck
   * transaction may still commit; the tool's retry of the delivery is then answered with its
   * stored result, so nothing is lost or stored twice. GitHub waits 10 s for an answer.
   */
  timeoutMs: number;
  /** Deliveries waiting for a batch beyond which new ones are refused at once (503). */
  maxQueued: number;
  /**
   * Body bytes of the deliveries waiting or being written beyond which new ones are refused at
   * once (503); a delivery alone is always taken. Webhook bodies may be 4 MiB.
   */
  maxHeldBytes: number;
}

/** How long deliveries are refused at once after a probe found the database not answering. */
const REFUSE_AFTER_FAILED_PROBE_MS = 2000;

const DEFAULT_INGEST_LIMITS: IngestBatcherLimits = {
  maxDeliveries: 128,
  maxEvents: 4000,
  timeoutMs: 10_000,
  maxQueued: 2048,
  maxHeldBytes: 256 * 1024 * 1024,
};

/**
 * Stores webhook deliveries with application-level group commit. A delivery that arrives while
 * a batch is being written waits for the next batch; each batch is one transaction of a dozen
 * set-based statements, however many deliveries it holds. So the tenant's quota counter row is
 * locked once per batch, not once per event, and `submit` resolves only after the commit that
 * made its events durable.
 *
 * Per delivery the transaction judges the API key (each request its own: key, tenant,
 * signature, rate limit), then records the delivery with its answer (retries get it; an
 * advisory lock on the delivery key orders concurrent copies), every event, the incidents it
 * opens or the open incidents it attaches to (per-fingerprint advisory locks; all locks are
 * taken in one sorted set), outbox events, audit rows and the monthly event count, which
 * refuses a whole delivery that does not fit. The dispatcher (woken by NOTIFY) then starts or
 * signals the workflows.
 */
export class IngestBatcher {
  private queue: Pending[] = [];
  /** Body bytes of the deliveries submitted and not yet answered. */
  private heldBytes = 0;
  /** The batch being written, until it settles or is abandoned for taking too long. */
  private current: InFlightBatch | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private readonly limits: IngestBatcherLimits;
  /**
   * After a batch was abandoned, the database is in doubt until `probe` says it answers: nothing
   * is sent meanwhile (ADR 0240). `probing` while a probe runs (deliveries wait for it);
   * until `refuseUntil` after a failed one, deliveries are refused at once.
   */
  private inDoubt = false;
  private probing = false;
  private refuseUntil = 0;

  /** `probe`: whether PostgreSQL answers a fresh connection (none: the next batch just goes ahead). */
  constructor(
    private readonly sql: postgres.Sql,
    private readonly clock: () => Date,
    limits: Partial<IngestBatcherLimits> = {},
    private readonly probe?: () => Promise<boolean>,
  ) {
    this.limits = { ...DEFAULT_INGEST_LIMITS, ...limits };
  }

  submit(request: IngestRequest): Promise<IngestOutcome> {
    const bytes = request.bytes ?? 0;
    if (this.inDoubt && !this.probing) {
      // Refused without being sent, so nothing of it is stored; past the window, a probe again.
      if (performance.now() < this.refuseUntil)
        return Promise.reject(new AppError('service_unavailable', DEPENDENCY_UNAVAILABLE_MESSAGE));
      this.checkDatabase();
    }
    if (
      this.queue.length >= this.limits.maxQueued ||
      (this.heldBytes > 0 && this.heldBytes + bytes > this.limits.maxHeldBytes)
    ) {
      // The database is not keeping up (or not answering): refuse now rather than hold more
      // requests, and their bodies, in memory. The tool retries.
      return Promise.reject(
        new AppError('service_unavailable', 'Too many deliveries are waiting to be stored; retry shortly'),
      );
    }
    this.heldBytes += bytes;
    let held = true;
    const release = () => {
      if (held) this.heldBytes -= bytes;
      held = false;
    };
    return new Promise((resolve, reject) => {
      this.queue.push({
        request,
        submittedAt: performance.now(),
        resolve: (outcome) => {
          release();
          resolve(outcome);
        },
        reject: (err) => {
          release();
          reject(err);
        },
      });
      if (!this.current && !this.inDoubt) this.flush();
    });
  }

  /**
   * Probes the database before anything more is sent to it: when it answers, the waiting
   * deliveries go in a batch; when not, they are answered 503 unsent, and so are new ones for
   * `REFUSE_AFTER_FAILED_PROBE_MS`.
   */
  private checkDatabase(): void {
    if (this.probing) return;
    this.inDoubt = true;
    this.probing = true;
    const answers = this.probe!().catch(() => false);
    void answers.then((answered) => {
      this.probing = false;
      if (answered) {
        this.inDoubt = false;
        if (!this.current && this.queue.length > 0) this.flush();
        return;
      }
      this.refuseUntil = performance.now() + REFUSE_AFTER_FAILED_PROBE_MS;
      const err = new AppError('service_unavailable', DEPENDENCY_UNAVAILABLE_MESSAGE);
      for (const pending of this.queue.splice(0)) pending.reject(err);
    });
  }

  private flush(): void {
    this.expireQueued();
    const batch: Pending[] = [];
    let events = 0;
    while (this.queue.length > 0 && batch.length < this.limits.maxDeliveries) {
      const next = this.queue[0]!;
      if (batch.length > 0 && events + next.request.events.length > this.limits.maxEvents) break;
      batch.push(this.queue.shift()!);
      events += next.request.events.length;
    }
    if (batch.length === 0) return;
    const current: InFlightBatch = { batch, startedAt: performance.now(), abandoned: false };
    this.current = current;
    this.watch();
    void this.write(current).finally(() => {
      if (this.current !== current) return; // abandoned: the next batch has already gone ahead
      this.current = null;
      if (this.queue.length > 0) this.flush();
    });
  }

  private notStoredInTime(): AppError {
    return new AppError(
      'service_unavailable',
      `The database did not store the delivery within ${this.limits.timeoutMs / 1000} s; retry it`,
    );
  }

  /**
   * Answers 503 the deliveries that have waited for a batch as long as a batch may take: they
   * were never sent, so nothing of them is stored. Without this, while the database did not
   * answer, the queue drained one abandoned batch per `timeoutMs` and a delivery waited there
   * for a minute and more. The queue is in submission order.
   */
  private expireQueued(): void {
    const expiredBefore = performance.now() - this.limits.timeoutMs;
    if (!(this.queue[0] && this.queue[0].submittedAt <= expiredBefore)) return;
    const err = this.notStoredInTime();
    while (this.queue[0] && this.queue[0].submittedAt <= expiredBefore) this.queue.shift()!.reject(err);
  }

  /**
   * One timer for the batcher, not one per batch: it abandons the batch in flight once it has
   * taken longer than the limit, answering its deliveries 503 and letting the next batch go on
   * another connection, and answers the deliveries that waited that long for a batch. The
   * abandoned attempt goes on in the background, its outcome dropped.
   */
  private watch(): void {
    if (this.watchdog) return;
    this.watchdog = setInterval(
      () => {
        const current = this.current;
        if (!current) {
          clearInterval(this.watchdog!);
          this.watchdog = null;
          return;
        }
        this.expireQueued();
        if (performance.now() - current.startedAt < this.limits.timeoutMs) return;
        current.abandoned = true;
        const err = this.notStoredInTime();
        for (const pending of current.batch) pending.reject(err);
        this.current = null;
        // A database that does not answer would take the next batch too, and commit it, answered
        // 503, when it answers again: it is probed first when it can be.
        if (this.probe) this.checkDatabase();
        else if (this.queue.length > 0) this.flush();
      },
      Math.min(1000, this.limits.timeoutMs / 4),
    );
    this.watchdog.unref();
  }

  private async write(current: InFlightBatch): Promise<void> {
    const { batch } = current;
    let outcomes: Array<IngestOutcome | AppError>;
    try {
      outcomes = await writeBatch(
        this.sql,
        batch.map((p) => p.request),
        this.clock(),
      );
    } catch (err) {
      await this.recover(current, err);
      return;
    }
    settle(batch, outcomes);
  }

  /** After a batch failed as a whole: answers each of its deliveries, unless it was abandoned. */
  private async recover(current: InFlightBatch, err: unknown): Promise<void> {
    const { batch } = current;
    let failure = err;
    if (isDependencyUnavailable(failure) && !current.abandoned) {
      // A connection lost once (a backend restarted, a socket reset) is retried once as a whole
      // on a fresh connection; an unreachable database then fails every delivery at once.
      try {
        settle(
          batch,
          await writeBatch(
            this.sql,
            batch.map((p) => p.request),
            this.clock(),
          ),
        );
        return;
      } catch (again) {
        failure = again;
      }
    }
    if (current.abandoned) return;
    if (batch.length === 1 || isDependencyUnavailable(failure)) {
      for (const pending of batch) pending.reject(failure);
      return;
    }
    // Any other failure of the batch as a whole (a deadlock with another process): each
    // delivery is then written on its own, so one cannot fail the others.
    for (const pending of batch) {
      if (current.abandoned) return;
      try {
        const [outcome] = await writeBatch(this.sql, [pending.request], this.clock());
        if (outcome instanceof AppError) pending.reject(outcome);
        else pending.resolve(outcome!);
      } catch (single) {
        pending.reject(single);
      }
    }
  }
}

interface InFlightBatch {
  batch: Pending[];
  startedAt: number;
  abandoned: boolean;
}

function settle(batch: Pending[], outcomes: Array<IngestOutcome | AppError>): void {
  batch.forEach((pending, i) => {
    const outcome = outcomes[i]!;
    if (outcome instanceof AppError) pending.reject(outcome);
    else pending.resolve(outcome);
  });
}
