// Where a netexec server's sockets come from. A `svcnet netexec` process opens them in the
// namespace it runs in (processSockets); the lab's pod host, one process serving all of a
// node's Pods, opens each Pod's inside that Pod's network namespace (netnsSockets), so the
// Pod's listeners, its /dial connections and their source addresses are the Pod's, as they
// would be in a container. Every socket is created inside a synchronous window
// (os/netns-enter.ts): a TCP listen() without an address, and UDP bind() and TCP connect()
// given a lookup that answers at once, create their socket before returning — Node would
// otherwise create it on a later tick, outside the namespace. Name lookups for /dial follow
// the Pod's own resolv.conf and hosts (pod-lookup.ts); the DNS queries themselves leave from
// the node's namespace.

import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns/promises';
import type { Server } from 'node:http';
import { connect, isIP, type AddressInfo, type LookupFunction, type Socket } from 'node:net';
import type { NetnsEnterer } from '../os/netns-enter.js';

/** An address a name resolved to. */
export interface LookedUp {
  readonly address: string;
  readonly family: 4 | 6;
}

export interface NetexecSockets {
  /** Listens on `port` (0: any) on `host`, or on every address; resolves the port. */
  listenTcp(server: Server, port: number, host: string | undefined): Promise<number>;
  /** A UDP socket bound to `port` on `host`, or dual-stack on every address. */
  bindUdp(port: number, host: string | undefined): Promise<UdpSocket>;
  /** An unbound-looking UDP socket for one /dial try (connect it to the target). */
  dialUdp(type: 'udp4' | 'udp6'): UdpSocket;
  /** A TCP connection to an IP address, for one /dial try's GET (http's createConnection). */
  connectTcp(ip: string, port: number): Socket;
  /** Every address of `name` (hosts file, then DNS), as getaddrinfo would give them. */
  readonly lookup: (name: string) => Promise<LookedUp[]>;
}

function listen(server: Server, port: number, host: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function bound(sock: UdpSocket): Promise<UdpSocket> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => {
      sock.close();
      reject(e);
    };
    sock.once('error', onError);
    sock.once('listening', () => {
      sock.off('error', onError);
      resolve(sock);
    });
  });
}

/** The process's own namespace: plain Node sockets. */
export const processSockets: NetexecSockets = {
  listenTcp: listen,
  async bindUdp(port, host) {
    const one = (type: 'udp4' | 'udp6'): Promise<UdpSocket> => {
      const sock = createSocket({ type, ipv6Only: false });
      const done = bound(sock);
      sock.bind(port, host);
      return done;
    };
    if (host !== undefined) return one(host.includes(':') ? 'udp6' : 'udp4');
    try {
      return await one('udp6');
    } catch {
      return one('udp4'); // IPv6 switched off in this namespace
    }
  },
  dialUdp: (type) => createSocket(type),
  connectTcp: (ip, port) => connect({ host: ip, port }),
  lookup: async (name) =>
    (await dnsLookup(name, { all: true })).map((a) => ({
      address: a.address,
      family: a.family === 6 ? 6 : 4,
    })),
};

/**
 * A lookup that answers at once with the address it is given (an IP literal): with it,
 * dgram's bind/connect and net's connect create their socket synchronously.
 */
type OneLookup = (
  host: string,
  opts: unknown,
  cb: (e: NodeJS.ErrnoException | null, address: string, family: number) => void,
) => void;

function literalLookup(ip: string | undefined): OneLookup {
  return (host, _opts, cb) => {
    const address = ip ?? host;
    const family = isIP(address);
    if (family === 0) cb(new Error(`not an IP address: ${address}`), '', 0);
    else cb(null, address, family);
  };
}

/**
 * Sockets inside the namespace at `netnsPath`; names resolve through `lookup` (the Pod's
 * resolv.conf and hosts).
 */
export function netnsSockets(
  enter: NetnsEnterer,
  netnsPath: string,
  lookup: (name: string) => Promise<LookedUp[]>,
): NetexecSockets {
  // dgram emits 'listening' inside bind() when the lookup answers at once: listen first.
  const udpIn = (
    type: 'udp4' | 'udp6',
    port: number,
    host: string | undefined,
  ): Promise<UdpSocket> =>
    enter.run(netnsPath, () => {
      const sock = createSocket({ type, ipv6Only: false, lookup: literalLookup(undefined) });
      const done = bound(sock);
      sock.bind(port, host ?? (type === 'udp6' ? '::' : '0.0.0.0'));
      return { done };
    }).done;
  return {
    listenTcp(server, port, host) {
      // With an address Node looks it up on a later tick, outside the namespace; the lab's
      // Pods listen on every address, as agnhost does by default.
      if (host !== undefined)
        return Promise.reject(
          new Error(`listen ${host}: a Pod served by the pod host listens on every address`),
        );
      enter.run(netnsPath, () => {
        server.listen({ port });
      });
      return new Promise((resolve, reject) => {
        const ok = (): void => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        };
        server.once('error', reject);
        if (server.listening) ok();
        else server.once('listening', ok);
      });
    },
    async bindUdp(port, host) {
      if (host !== undefined) return udpIn(host.includes(':') ? 'udp6' : 'udp4', port, host);
      try {
        return await udpIn('udp6', port, undefined);
      } catch {
        return udpIn('udp4', port, undefined);
      }
    },
    dialUdp(type) {
      return enter.run(netnsPath, () => {
        const sock = createSocket({ type, lookup: literalLookup(undefined) });
        sock.bind(0, type === 'udp6' ? '::' : '0.0.0.0');
        return sock;
      });
    },
    connectTcp(ip, port) {
      const family = isIP(ip);
      if (family === 0) throw new Error(`connect: not an IP address: ${ip}`);
      // A name (never looked up by DNS) with a lookup that answers at once: Node connects
      // before returning. An IP literal would wait for the next tick.
      return enter.run(netnsPath, () =>
        connect({
          host: 'pod-dial.invalid',
          port,
          family,
          lookup: literalLookup(ip) as unknown as LookupFunction,
        }),
      );
    },
    lookup,
  };
}
