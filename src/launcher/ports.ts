import net from 'node:net';

/** Fails with a message naming the variable when something already listens on the port. */
export async function assertPortFree(port: number, host: string, variable: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `Port ${port} is already in use (${variable}); stop what uses it or set ${variable} to a free port`,
            )
          : err,
      );
    });
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
