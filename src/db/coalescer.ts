/**
 * Group commit for independent requests: calls made while a batch is running wait and go
 * together in the next one, so N concurrent callers cost one statement instead of N (and one
 * hot row is updated once per batch instead of once per call). At most one batch runs at a
 * time per coalescer. `run` answers one result per input, in order; if it throws, every
 * caller of that batch gets the error.
 */
export class Coalescer<In, Out> {
  private queue: Array<{ input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }> = [];
  private running = false;

  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly maxBatch = 256,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.running) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.running = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const outputs = await this.run(batch.map((b) => b.input));
        batch.forEach((b, i) => b.resolve(outputs[i]!));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
