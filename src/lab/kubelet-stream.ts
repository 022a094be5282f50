// The node agent's streaming endpoints (KubeletHandlers.stream): picks the protocol from the
// upgrade request — WebSocket with a channel subprotocol for exec and attach, WebSocket with
// SPDY/3.1+portforward.k8s.io or a plain `Upgrade: SPDY/3.1` for port-forward — answers the
// handshake and hands the connection to kubelet-exec.ts or kubelet-portforward.ts, with the
// Pod found in the agent's informer. A command runs in the Pod's network namespace and a UTS
// namespace of its own (podExecArgv). Attach is refused (a lab container's process is the
// agent's netexec server, with no stdin to attach to), as is SPDY exec.

import { connect } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { Duplex } from 'node:stream';
import type { Pod } from '../kube/types.js';
import { netnsExecArgv } from '../os/netns.js';
import type { StartPiped } from '../os/piped-process.js';
import { EXEC_PROTOCOLS, execFailure, execSession, parseExecQuery } from './kubelet-exec.js';
import {
  PORT_FORWARD_PROTOCOL,
  PORT_FORWARD_WS_PROTOCOL,
  portForwardAcceptor,
  type PodConnection,
  type PodDialer,
} from './kubelet-portforward.js';
import { refuseUpgrade, type KubeletHandlers, type KubeletTarget } from './kubelet-server.js';
import { containerEnv } from './pod-exec.js';
import { podNetnsName } from './pod-runtime.js';
import { SpdySession } from './spdy.js';
import {
  chooseProtocol,
  handshakeResponse,
  isWebSocketRequest,
  offeredProtocols,
  WebSocketConnection,
} from './websocket.js';

export interface KubeletStreamDeps {
  readonly nodeName: string;
  /** The Pod NAMESPACE/NAME bound to this node, if the agent knows it. */
  podOf(namespace: string, name: string): Pod | undefined;
  readonly start: StartPiped;
}

/** Relays stdin to 127.0.0.1:PORT and back; exits 1 with the reason when it cannot connect. */
const RELAY =
  "const s=require('net').connect(Number(process.argv[1]),'127.0.0.1');" +
  "s.on('connect',()=>{process.stdin.pipe(s);s.pipe(process.stdout);});" +
  "s.on('error',(e)=>{process.stderr.write(e.message);process.exit(1);});";

/** Dials 127.0.0.1:port in the Pod's network namespace (see kubelet-portforward.ts). */
export function podDialer(pod: Pod, start: StartPiped): PodDialer {
  if (pod.spec?.hostNetwork === true)
    return (port) => {
      const socket = connect(port, '127.0.0.1');
      const done = new Promise<string | undefined>((resolve) => {
        socket.once('error', (e) => {
          resolve(e.message);
        });
        socket.once('close', () => {
          resolve(undefined);
        });
      });
      return { socket, done };
    };
  const netns = podNetnsName(pod);
  return (port): PodConnection => {
    const p = start(netnsExecArgv(netns, [process.execPath, '-e', RELAY, String(port)]), {}, true);
    if (p.stdin === undefined) throw new Error('relay started without stdin');
    const socket = Duplex.from({ readable: p.stdout, writable: p.stdin });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    socket.on('close', () => {
      p.kill();
    });
    const done = p.exited.then((code) =>
      code === 0 ? undefined : stderr.trim() || `relay exited ${String(code)}`,
    );
    return { socket, done };
  };
}

/**
 * argv in the Pod's network namespace and in a UTS namespace of its own named as the Pod
 * (its HOSTNAME), so `hostname` answers as in a container; the lab has no other container
 * namespaces (files and processes are the machine's).
 */
export function podExecArgv(netns: string, argv: readonly string[]): [string, ...string[]] {
  return netnsExecArgv(netns, [
    'unshare',
    '--uts',
    '--',
    'sh',
    '-c',
    'hostname "$HOSTNAME" 2>/dev/null; exec "$@"',
    'sh',
    ...argv,
  ]);
}

function serveExec(
  deps: KubeletStreamDeps,
  pod: Pod,
  target: KubeletTarget,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const protocol = chooseProtocol(offeredProtocols(req), EXEC_PROTOCOLS);
  if (!isWebSocketRequest(req) || protocol === undefined) {
    refuseUpgrade(
      socket,
      400,
      'Bad Request',
      `exec: this node serves WebSocket ${EXEC_PROTOCOLS.join(', ')} only`,
    );
    return;
  }
  const hs = handshakeResponse(req, protocol);
  if (!hs.ok) {
    refuseUpgrade(socket, 400, 'Bad Request', hs.error);
    return;
  }
  socket.write(hs.response);
  let handlers = { onMessage: (_d: Buffer): void => undefined, onClose: (): void => undefined };
  const ws = new WebSocketConnection(
    socket,
    {
      onMessage: (d) => {
        handlers.onMessage(d);
      },
      onClose: () => {
        handlers.onClose();
      },
    },
    head,
  );
  try {
    const container = pod.spec?.containers.find((c) => c.name === target.container);
    const netns = podNetnsName(pod);
    handlers = execSession(ws, protocol, parseExecQuery(target.query), {
      wrap: (argv) => (pod.spec?.hostNetwork === true ? argv : podExecArgv(netns, argv)),
      env: containerEnv(pod, container, deps.nodeName),
      start: deps.start,
    });
  } catch (e) {
    ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(execFailure(String(e))))]));
    ws.close(1000);
  }
}

function servePortForward(
  deps: KubeletStreamDeps,
  pod: Pod,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const label = `${pod.metadata?.name ?? ''}, uid ${pod.metadata?.uid ?? ''}`;
  const acceptor = portForwardAcceptor(label, podDialer(pod, deps.start));
  if (isWebSocketRequest(req)) {
    const protocol = chooseProtocol(offeredProtocols(req), [PORT_FORWARD_WS_PROTOCOL]);
    const hs = protocol === undefined ? undefined : handshakeResponse(req, protocol);
    if (hs === undefined || !hs.ok) {
      refuseUpgrade(
        socket,
        400,
        'Bad Request',
        hs?.ok === false ? hs.error : `port-forward: WebSocket needs ${PORT_FORWARD_WS_PROTOCOL}`,
      );
      return;
    }
    socket.write(hs.response);
    // The session writes through the connection, which feeds the session (head included).
    const link: { ws?: WebSocketConnection } = {};
    const session = new SpdySession(
      (b) => link.ws?.send(b),
      (s) => acceptor.accept(s),
      () => {
        acceptor.closeAll();
        link.ws?.close(1000);
      },
    );
    link.ws = new WebSocketConnection(
      socket,
      {
        onMessage: (d) => {
          session.feed(d);
        },
        onClose: () => {
          session.shutdown('WebSocket closed');
        },
      },
      head,
    );
    return;
  }
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  const versions = String(req.headers['x-stream-protocol-version'] ?? '').split(/,\s*/);
  if (upgrade !== 'spdy/3.1' || !versions.includes(PORT_FORWARD_PROTOCOL)) {
    refuseUpgrade(
      socket,
      400,
      'Bad Request',
      `port-forward: upgrade to SPDY/3.1 with X-Stream-Protocol-Version ${PORT_FORWARD_PROTOCOL}`,
    );
    return;
  }
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
      `X-Stream-Protocol-Version: ${PORT_FORWARD_PROTOCOL}\r\n\r\n`,
  );
  const session = new SpdySession(
    (b) => socket.write(b),
    (s) => acceptor.accept(s),
    () => {
      acceptor.closeAll();
      socket.end();
    },
  );
  socket.on('data', (d: Buffer) => {
    session.feed(d);
  });
  socket.on('close', () => {
    session.shutdown('connection closed');
  });
  socket.on('error', () => undefined);
  if (head.length > 0) session.feed(head);
}

/** The `stream` handler of the node's kubelet API. */
export function kubeletStream(deps: KubeletStreamDeps): NonNullable<KubeletHandlers['stream']> {
  return (target, req, socket, head) => {
    const pod = deps.podOf(target.namespace, target.pod);
    if (pod === undefined) {
      refuseUpgrade(
        socket,
        404,
        'Not Found',
        `pod ${target.namespace}/${target.pod} is not running on node ${deps.nodeName}`,
      );
      return;
    }
    if (target.endpoint === 'portForward') servePortForward(deps, pod, req, socket, head);
    else if (target.endpoint === 'exec') serveExec(deps, pod, target, req, socket, head);
    else
      refuseUpgrade(
        socket,
        400,
        'Bad Request',
        'attach: lab containers have no stdin to attach to',
      );
  };
}
