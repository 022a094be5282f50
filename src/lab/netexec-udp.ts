// netexec's UDP side: the server that answers agnhost's three UDP commands, and the client
// /dial uses for protocol=udp. Commands are matched as agnhost matches them (trimmed and
// lower-cased, so `echo Hello` answers `hello`); unknown or empty commands get no answer.
// A /dial try is one connected socket, one datagram out, one datagram back (at most 2048
// bytes, as agnhost reads), with agnhost's error wording, so an ICMP port unreachable shows
// as `connection refused` and silence as `i/o timeout`. No SCTP. Sockets come from the
// server's NetexecSockets (netexec-sockets.ts).

import type { Socket } from 'node:dgram';
import { joinHostPort } from './netexec-go.js';

/** Answers one UDP command as agnhost does: `hostname`, `echo <msg>`, `clientip`. */
export function answerUdp(command: string, hostname: string, peer: string): string | undefined {
  const text = command.trim().toLowerCase();
  if (text === 'hostname') return hostname;
  if (text === 'clientip') return peer;
  if (text.startsWith('echo ')) return text.slice(5);
  return undefined;
}

/** Serves the UDP commands on a bound socket. */
export function serveUdp(sock: Socket, hostname: string): void {
  sock.on('message', (msg, rinfo) => {
    const peer = joinHostPort(rinfo.address, rinfo.port);
    const answer = answerUdp(msg.subarray(0, 2048).toString('utf8'), hostname, peer);
    if (answer !== undefined) sock.send(answer, rinfo.port, rinfo.address);
  });
}

const ERRNO_TEXT: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network is unreachable',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
};

/** The text Go's syscall errors print for a Node errno (`connection refused`). */
export function errnoText(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
  return ERRNO_TEXT[code] ?? (e instanceof Error ? e.message : String(e));
}

/**
 * One /dial try over UDP: a connected socket to host:port (host '' is this machine), the
 * request sent as one datagram, the first datagram back returned. Rejects with agnhost's
 * message: `udp dial failed. err:…`, `reading from udp connection failed. err:'…'`.
 */
export function dialUdp(
  host: string,
  port: number,
  request: string,
  timeoutMs: number,
  socket: (type: 'udp4' | 'udp6') => Socket,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = socket(host.includes(':') ? 'udp6' : 'udp4');
    let conn = `udp ${joinHostPort(host, port)}`;
    let connected = false;
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (err: Error | undefined, answer?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.close();
      if (err) reject(err);
      else resolve(answer ?? '');
    };
    const readFailed = (why: string): Error =>
      new Error(`reading from udp connection failed. err:'read ${conn}: ${why}'`);
    sock.on('message', (msg) => {
      const text = msg.subarray(0, 2048).toString('utf8');
      if (text === '') finish(new Error(`reading from udp connection failed. err:'<nil>'`));
      else finish(undefined, text);
    });
    sock.on('error', (e) => {
      if (!connected)
        finish(new Error(`udp dial failed. err:dial ${conn}: connect: ${errnoText(e)}`));
      else finish(readFailed(`read: ${errnoText(e)}`));
    });
    // Connected, as agnhost's net.DialUDP: an ICMP port unreachable then surfaces as
    // ECONNREFUSED instead of the try silently timing out.
    sock.connect(port, host === '' ? undefined : host, () => {
      connected = true;
      const local = sock.address();
      const remote = sock.remoteAddress();
      conn = `udp ${joinHostPort(local.address, local.port)}->${joinHostPort(remote.address, remote.port)}`;
      timer = setTimeout(() => {
        finish(readFailed('i/o timeout'));
      }, timeoutMs);
      sock.send(request, (e) => {
        if (e) finish(new Error(`udp connection write failed. err:write ${conn}: ${errnoText(e)}`));
      });
    });
  });
}
