// Holding a daemon's listen addresses while it loads the slow parts (the Kubernetes client
// library costs one to several seconds), so that a taken port is reported at once instead of
// after that load: each fixed address is bound the way the daemon will bind it (TCP, and UDP
// too for DNS), serves nothing (connections are closed on arrival, datagrams dropped), and is
// released just before the daemon binds it for real. Whole or not at all: when one address
// cannot be bound, the ones already held are closed and a LISTEN_FAILED error names the
// address and the flag. Port 0 is not held (any free port will do). The daemons keep their
// own whole-or-nothing binding: this is an early check, not a replacement.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { closeQuietly } from './close.js';
import { listenFailed } from './listen-error.js';

/** One address a daemon will listen on, and how to name it when it cannot. */
export interface ListenAddress {
  /** What listens there, e.g. `/health` or `DNS`. */
  readonly what: string;
  readonly host: string;
  readonly port: number;
  /** The flag that changes it, e.g. `--health-listen`. */
  readonly flag: string;
  /** Bind UDP on the same port as well as TCP (the DNS server does). */
  readonly udp?: boolean;
}

/** Addresses held by holdListenAddresses. */
export interface ListenHold {
  /** Closes every held socket; resolves once the ports are free for the daemon to bind. */
  release(): Promise<void>;
}

function bindTcp(host: string, port: number): Promise<Server> {
  // Nothing is served while held: a client that connects is closed at once.
  const srv = createServer((s) => {
    s.destroy();
  });
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => {
      srv.off('error', reject);
      resolve(srv);
    });
  });
}

function bindUdp(host: string, port: number): Promise<UdpSocket> {
  // The same family choice as the DNS server's; datagrams that arrive are dropped.
  const sock = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  return new Promise((resolve, reject) => {
    sock.once('error', (e) => {
      sock.close();
      reject(e);
    });
    sock.bind(port, host, () => {
      sock.removeAllListeners('error');
      resolve(sock);
    });
  });
}

/**
 * Binds every address with a fixed port, in order, or throws LISTEN_FAILED for the first that
 * cannot be bound after closing the ones already held.
 */
export async function holdListenAddresses(addrs: readonly ListenAddress[]): Promise<ListenHold> {
  const held: (Server | UdpSocket)[] = [];
  const release = async (): Promise<void> => {
    await Promise.all(held.splice(0).map((s) => closeQuietly(s)));
  };
  for (const a of addrs) {
    if (a.port === 0) continue;
    try {
      if (a.udp === true) held.push(await bindUdp(a.host, a.port));
      held.push(await bindTcp(a.host, a.port));
    } catch (e) {
      await release();
      throw listenFailed(a.what, a.host, a.port, a.flag, e);
    }
  }
  return { release };
}
