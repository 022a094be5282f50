// `svcnet apiserver`: the embedded Kubernetes-compatible API server as a daemon. It listens
// only where told (default 127.0.0.1:6443, plain HTTP with a bearer token), writes a
// kubeconfig for kubectl and client-node when asked, and with --data-dir survives restarts
// (SQLite storage with bounded history and a quota).
// Runs until SIGINT/SIGTERM. Bad flags exit 2; a --listen address that cannot be bound exits
// 1 with one line naming it, before anything serves.

import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { startApiServer, writeKubeconfig } from '../apiserver/daemon.js';
import { SvcnetError } from '../errors.js';
import { parseCIDR } from '../util/ip.js';
import { listenFailed } from '../util/listen-error.js';
import { addLogFlags, daemonAction, daemonLogger } from './daemon.js';

/** The system error codes of a failed bind (as opposed to bad flags or a bad data dir). */
const BIND_ERRORS = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'EINVAL', 'ENOTFOUND']);

function isBindError(e: unknown): boolean {
  return (
    typeof e === 'object' &&
    e !== null &&
    'syscall' in e &&
    (e.syscall === 'listen' || e.syscall === 'bind' || e.syscall === 'getaddrinfo') &&
    'code' in e &&
    BIND_ERRORS.has(String(e.code))
  );
}

interface ApiServerFlags {
  listen: string;
  writeKubeconfig?: string;
  dataDir?: string;
  serviceClusterIpRange: string;
  serviceNodePortRange: string;
  token?: string;
  advertiseAddress?: string;
  logRequests?: boolean;
  kubeletSocketDir?: string;
  insecureHttp?: boolean;
  v?: string;
  loggingFormat?: string;
  logLevel?: string;
  maxRequestBytes?: string;
  maxConnections?: string;
  quotaBackendBytes: string;
  historyRevisions: string;
  historyAge: string;
  historyBytes: string;
}

const UNITS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** A count or size: `2147483648`, `128Mi`, `2Gi`. */
function parseBytes(flag: string, text: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(text.trim());
  if (!m)
    throw new SvcnetError(
      'INVALID_INPUT',
      `${flag}: want a whole number, optionally with Ki, Mi or Gi (e.g. 2Gi), got ${JSON.stringify(text)}`,
    );
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1);
}

/** `n` when it is at least `min`; else INVALID_INPUT naming the flag. */
function atLeast(flag: string, n: number, min: number): number {
  if (n < min) throw new SvcnetError('INVALID_INPUT', `${flag}: must be at least ${min}, got ${n}`);
  return n;
}

/** `300`, `300s`, `5m`, `1h` -> milliseconds. */
function parseDuration(flag: string, text: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(text.trim());
  if (!m)
    throw new SvcnetError(
      'INVALID_INPUT',
      `${flag}: want a duration (e.g. 5m), got ${JSON.stringify(text)}`,
    );
  return Number(m[1]) * ({ s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'] ?? 1000);
}

/** Registers `svcnet apiserver`. */
export function registerApiserverCommand(program: Command): void {
  const cmd = program
    .command('apiserver')
    .description('run the embedded Kubernetes-compatible API server (lab default)')
    .option('--listen <addr:port>', 'address and port to listen on', '127.0.0.1:6443')
    .option('--write-kubeconfig <file>', 'write a kubeconfig (server URL and token) to FILE')
    .option('--data-dir <dir>', 'keep objects in DIR/storage.db (SQLite; survives restarts)')
    .option(
      '--quota-backend-bytes <bytes>',
      'with --data-dir: past this size only deletions are accepted (507)',
      '2Gi',
    )
    .option(
      '--history-revisions <n>',
      'revisions kept for watches to resume from, at least',
      '10000',
    )
    .option(
      '--history-age <duration>',
      'with --data-dir: also keep revisions younger than this',
      '5m',
    )
    .option('--history-bytes <bytes>', 'with --data-dir: at most this much history', '128Mi')
    .option(
      '--service-cluster-ip-range <cidr>',
      'Service IP range(s), comma-separated for dual-stack',
      '10.96.0.0/12',
    )
    .option('--service-node-port-range <a-b>', 'NodePort range', '30000-32767')
    .option(
      '--token <token>',
      'bearer token clients must present (default: random, kept in --data-dir)',
    )
    .option(
      '--advertise-address <ip>',
      'address of the kubernetes Service endpoints (default: the listen address)',
    )
    .option(
      '--max-request-bytes <n>',
      'largest request body accepted; larger ones get 413 (default 3145728, as kube-apiserver)',
    )
    .option(
      '--max-connections <n>',
      'connections held at most; past it idle unauthenticated ones are shed first (default: open-file limit - 1024)',
    )
    .option(
      '--kubelet-socket-dir <dir>',
      "a lab's state directory: Pod logs, exec, attach and port-forward reach node N's agent at DIR/nodes/N/kubelet.sock",
    )
    .option('--log-requests', 'log every request')
    .option(
      '--insecure-http',
      "serve plain HTTP (kubectl then sends no token: only svcnet's daemons and client-node authenticate)",
    );
  addLogFlags(cmd).action(
    daemonAction('apiserver', async (flags: ApiServerFlags) => {
      const cidrs = flags.serviceClusterIpRange.split(',').map((s) => s.trim());
      for (const c of cidrs)
        if (parseCIDR(c) === undefined)
          throw new SvcnetError(
            'INVALID_INPUT',
            `--service-cluster-ip-range: not a CIDR: ${JSON.stringify(c)}`,
          );
      if (!/^\d+-\d+$/.test(flags.serviceNodePortRange))
        throw new SvcnetError(
          'INVALID_INPUT',
          `--service-node-port-range: want A-B, got ${JSON.stringify(flags.serviceNodePortRange)}`,
        );
      if (
        flags.dataDir !== undefined &&
        existsSync(flags.dataDir) &&
        !statSync(flags.dataDir).isDirectory()
      )
        throw new SvcnetError('INVALID_INPUT', `--data-dir ${flags.dataDir}: not a directory`);
      const maxRequestBytes =
        flags.maxRequestBytes === undefined
          ? undefined
          : atLeast(
              '--max-request-bytes',
              parseBytes('--max-request-bytes', flags.maxRequestBytes),
              1024,
            );
      const maxConnections =
        flags.maxConnections === undefined
          ? undefined
          : atLeast('--max-connections', parseBytes('--max-connections', flags.maxConnections), 1);
      const revisions = atLeast(
        '--history-revisions',
        parseBytes('--history-revisions', flags.historyRevisions),
        1,
      );
      const history = {
        revisions,
        ageMs: parseDuration('--history-age', flags.historyAge),
        bytes: parseBytes('--history-bytes', flags.historyBytes),
      };
      const quota = parseBytes('--quota-backend-bytes', flags.quotaBackendBytes);
      const log = daemonLogger('apiserver', flags);
      const server = await startApiServer({
        listen: flags.listen,
        serviceCIDRs: cidrs,
        nodePortRange: flags.serviceNodePortRange,
        ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
        history,
        quotaBackendBytes: quota,
        warn: (message) => {
          log.warn({ message }, 'Storage');
        },
        ...(flags.insecureHttp === true ? { insecureHttp: true } : {}),
        ...(maxRequestBytes !== undefined ? { maxRequestBytes } : {}),
        ...(maxConnections !== undefined ? { maxConnections } : {}),
        ...(flags.token !== undefined ? { token: flags.token } : {}),
        ...(flags.advertiseAddress !== undefined
          ? { advertiseAddress: flags.advertiseAddress }
          : {}),
        ...(flags.kubeletSocketDir !== undefined
          ? { kubeletSocketDir: flags.kubeletSocketDir }
          : {}),
        ...(flags.logRequests === true
          ? {
              onRequest: (r) => {
                log.info(r, 'Request');
              },
            }
          : {}),
      }).catch((e: unknown) => {
        if (!isBindError(e)) throw e;
        const m = /^\[?([^\]]*)\]?:(\d+)$/.exec(flags.listen);
        throw listenFailed('API server', m?.[1] ?? flags.listen, Number(m?.[2]), '--listen', e);
      });
      if (flags.writeKubeconfig !== undefined) writeKubeconfig(flags.writeKubeconfig, server);
      log.info(
        { url: server.url, kubeconfig: flags.writeKubeconfig, dataDir: flags.dataDir },
        'API server listening',
      );
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          log.info('Shutting down');
          void server.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      return undefined;
    }),
  );
}
