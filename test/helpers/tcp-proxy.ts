/**
 * A TCP relay in front of a real server (PostgreSQL in the outage tests), which a test can cut,
 * stall and restore. `cut()` drops every open connection and stops listening (new connections
 * are refused, as during a restart); `stall()` keeps every connection open but carries nothing
 * either way (as a network partition does: nobody hears that the other side is gone);
 * `restore()` drops what was stalled and relays again, on the same port. Nothing is faked: the
 * bytes are the server's own.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops the open connections and refuses new ones. */
  cut(): Promise<void>;
  /** Holds every connection, open and new, without relaying a byte. */
  stall(): void;
  /** Drops stalled connections and relays again, on the same port. */
  restore(): Promise<void>;
  /**
   * Relays again what was stalled, as a frozen server does once thawed: the connections it held
   * carry on with what was sent meanwhile (those accepted during the stall are dropped).
   */
  resume(): void;
  /**
   * Drops, once, the connection whose client next sends bytes containing `marker` (a statement's
   * text), before they reach the server: that connection is lost mid-transaction, the others
   * carry on. Resolves when it has dropped it.
   */
  cutOnce(marker: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  /** Connections accepted while stalled, never relayed. */
  const held = new Set<Socket>();
  let stalled = false;
  let cutOn: { marker: string; done: () => void } | null = null;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const newServer = (): Server =>
    createServer((client) => {
      track(client);
      if (stalled) {
        client.pause(); // accepted, never answered
        held.add(client);
        return;
      }
      const upstream = connect(target);
      track(upstream);
      const pair = { client, upstream };
      pairs.add(pair);
      const drop = () => {
        pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      let tail = ''; // while a cut is armed: the end of the bytes before, for a marker split across chunks
      client.on('data', (chunk: Buffer) => {
        if (cutOn) {
          const text = tail + chunk.toString('latin1');
          tail = text.slice(-cutOn.marker.length);
          if (text.includes(cutOn.marker)) {
            const { done } = cutOn;
            cutOn = null;
            drop();
            done();
            return;
          }
        }
        if (!upstream.write(chunk)) {
          client.pause();
          upstream.once('drain', () => stalled || client.resume());
        }
      });
      upstream.pipe(client);
      client.on('close', drop);
      upstream.on('close', drop);
    });
  const listen = (server: Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
    });
  let server: Server | null = newServer();
  const port = await listen(server, 0);
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  const stop = async () => {
    const closing = server;
    server = null;
    dropAll();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };
  return {
    port,
    cut: stop,
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        upstream.unpipe();
        client.pause();
        upstream.pause();
      }
    },
    resume() {
      stalled = false;
      for (const { client, upstream } of pairs) {
        upstream.pipe(client);
        client.resume();
        upstream.resume();
      }
      for (const socket of held) socket.destroy();
      held.clear();
    },
    async restore() {
      if (stalled) {
        stalled = false;
        dropAll();
      }
      if (server) return;
      server = newServer();
      await listen(server, port);
    },
    cutOnce(marker) {
      return new Promise<void>((resolve) => {
        cutOn = { marker, done: resolve };
      });
    },
    close: stop,
  };
}
