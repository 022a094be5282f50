// `svcnet proxy`: the kube-proxy-compatible daemon for one node (iptables mode). Flags
// mirror kube-proxy's; settings come from defaults, then the KubeProxyConfiguration file
// (`--config`), then flags given explicitly on the command line. `--cleanup` removes every
// rule and chain the proxy created and exits. Logs go to stderr (text on a terminal, JSON
// otherwise). A bad flag, config or kubeconfig exits 2 and a listener that cannot bind exits 1,
// each with one line, before any rule is written.

import { hostname } from 'node:os';
import type { Command } from 'commander';
import { Option } from 'commander';
import { SvcnetError, ValidationError } from '../errors.js';
import type { FieldError } from '../errors.js';
import type { EndpointSlice, Node, Service } from '../kube/types.js';
import { createRealClock } from '../util/clock.js';
import type { DetectLocalMode, ProxyDaemonConfig } from '../proxy/daemon.js';
import { parseDuration } from '../proxy/config.js';
import { isHostNetns } from '../proxy/host-netns.js';
import { parseBindAddress } from '../proxy/listen.js';
import { holdListenAddresses } from '../util/listen-hold.js';
import { parseCIDRSloppy, formatCIDR } from '../util/ip.js';
import type { IPFamily } from '../util/ip.js';
import { addLogFlags, daemonAction, daemonKubeConfig, daemonLogger } from './daemon.js';
import { action, readInput } from './run.js';
import { loadProxyConfigFile } from '../proxy/config-file.js';
import type { ProxyConfigFile } from '../proxy/config-file.js';

interface ProxyFlags {
  kubeconfig?: string;
  mode?: string;
  proxyMode?: string;
  hostnameOverride?: string;
  config?: string;
  cleanup?: boolean;
  clusterCidr?: string;
  detectLocalMode?: string;
  podBridgeInterface?: string;
  podInterfaceNamePrefix?: string;
  masqueradeAll?: boolean;
  iptablesMasqueradeBit?: string;
  iptablesLocalhostNodeports?: string;
  iptablesSyncPeriod?: string;
  iptablesMinSyncPeriod?: string;
  nodeportAddresses?: string;
  healthzBindAddress?: string;
  metricsBindAddress?: string;
  conntrackMaxPerCore?: string;
  conntrackMin?: string;
  conntrackTcpTimeoutEstablished?: string;
  conntrackTcpTimeoutCloseWait?: string;
  conntrackTcpBeLiberal?: boolean;
  conntrackUdpTimeout?: string;
  conntrackUdpTimeoutStream?: string;
  iptablesVariant?: string;
  canaryInterval?: string;
  logLevel?: string;
  v?: string;
  loggingFormat?: string;
}

const DETECT_LOCAL_MODES: readonly DetectLocalMode[] = [
  '',
  'ClusterCIDR',
  'NodeCIDR',
  'BridgeInterface',
  'InterfaceNamePrefix',
];

/** kube-proxy's defaults (KubeProxyConfiguration v1alpha1, iptables mode, Linux). */
export function defaultProxyConfig(nodeName: string): ProxyDaemonConfig {
  return {
    nodeName,
    families: ['IPv4'],
    clusterCIDRs: [],
    detectLocalMode: 'ClusterCIDR',
    bridgeInterface: '',
    interfaceNamePrefix: '',
    masqueradeAll: false,
    masqueradeBit: 14,
    localhostNodePorts: true,
    nodePortAddresses: [],
    syncPeriodMs: 30_000,
    minSyncPeriodMs: 1_000,
    healthzBindAddress: '0.0.0.0:10256',
    metricsBindAddress: '127.0.0.1:10249',
    conntrack: {
      maxPerCore: 32768,
      min: 131072,
      tcpEstablishedTimeoutSeconds: 86_400,
      tcpCloseWaitTimeoutSeconds: 3_600,
      tcpBeLiberal: false,
      udpTimeoutSeconds: 0,
      udpStreamTimeoutSeconds: 0,
    },
    canaryIntervalMs: 1_000,
    iptablesVariant: 'auto',
  };
}

function familiesOf(cidrs: readonly string[]): IPFamily[] {
  const fams = new Set(cidrs.map((c) => parseCIDRSloppy(c)?.family));
  const out: IPFamily[] = [];
  if (fams.has('IPv4') || fams.size === 0) out.push('IPv4');
  if (fams.has('IPv6')) out.push('IPv6');
  return out;
}

/**
 * Resolves the effective config: defaults ← config file ← explicit flags. Collects every
 * bad value before failing (ValidationError naming the flag or field).
 */
export function resolveProxyConfig(
  flags: ProxyFlags,
  file: ProxyConfigFile | undefined,
  defaultNodeName: string,
): ProxyDaemonConfig {
  const errors: FieldError[] = [];
  const bad = (field: string, message: string): void => {
    errors.push({ object: 'svcnet proxy', field, message });
  };
  const nodeName =
    (flags.hostnameOverride ?? file?.hostnameOverride ?? '').trim().toLowerCase() ||
    defaultNodeName;
  const base = defaultProxyConfig(nodeName);
  const num = (
    flag: string,
    text: string | undefined,
    min: number,
    max: number,
  ): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max) {
      bad(flag, `must be an integer ${min}-${max}, got ${JSON.stringify(text)}`);
      return undefined;
    }
    return n;
  };
  const dur = (flag: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const ms = parseDuration(text.trim());
    if (ms === undefined || ms < 0)
      bad(flag, `must be a duration like 1s, 500ms or 1h30m, got ${JSON.stringify(text)}`);
    return ms === undefined || ms < 0 ? undefined : Math.round(ms);
  };
  const bool = (flag: string, text: string | undefined): boolean | undefined => {
    if (text === undefined) return undefined;
    if (text === 'true' || text === '') return true;
    if (text === 'false') return false;
    bad(flag, `must be true or false, got ${JSON.stringify(text)}`);
    return undefined;
  };

  const clusterCIDRText = flags.clusterCidr ?? file?.clusterCIDR ?? '';
  const clusterCIDRs: string[] = [];
  for (const part of clusterCIDRText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const c = parseCIDRSloppy(part);
    if (c === undefined) bad('--cluster-cidr', `not a CIDR: ${JSON.stringify(part)}`);
    else clusterCIDRs.push(formatCIDR(c));
  }
  const mode = flags.detectLocalMode ?? file?.detectLocalMode ?? base.detectLocalMode;
  if (!(DETECT_LOCAL_MODES as readonly string[]).includes(mode))
    bad(
      '--detect-local-mode',
      `must be one of ClusterCIDR, NodeCIDR, BridgeInterface, InterfaceNamePrefix, got ${JSON.stringify(mode)}`,
    );
  const nodePortAddresses =
    flags.nodeportAddresses !== undefined
      ? flags.nodeportAddresses
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')
      : (file?.nodePortAddresses ?? base.nodePortAddresses);
  for (const a of nodePortAddresses)
    if (!['all', 'primary', 'localhost'].includes(a) && parseCIDRSloppy(a) === undefined)
      bad(
        '--nodeport-addresses',
        `must be CIDRs or primary, localhost, all; got ${JSON.stringify(a)}`,
      );
  const variant = flags.iptablesVariant ?? 'auto';
  if (variant !== 'auto' && variant !== 'legacy' && variant !== 'nft')
    bad('--iptables-variant', `must be auto, legacy or nft, got ${JSON.stringify(variant)}`);

  const masqueradeBit =
    num('--iptables-masquerade-bit', flags.iptablesMasqueradeBit, 0, 31) ??
    file?.iptables?.masqueradeBit ??
    base.masqueradeBit;
  const syncPeriodMs =
    dur('--iptables-sync-period', flags.iptablesSyncPeriod) ??
    file?.iptables?.syncPeriodMs ??
    base.syncPeriodMs;
  const minSyncPeriodMs =
    dur('--iptables-min-sync-period', flags.iptablesMinSyncPeriod) ??
    file?.iptables?.minSyncPeriodMs ??
    base.minSyncPeriodMs;
  if (syncPeriodMs <= 0) bad('--iptables-sync-period', 'must be greater than 0');
  const fc = file?.conntrack;
  const secs = (flag: string, text: string | undefined): number | undefined => {
    const ms = dur(flag, text);
    return ms === undefined ? undefined : ms / 1000;
  };
  const cfg: ProxyDaemonConfig = {
    ...base,
    families: familiesOf(clusterCIDRs),
    clusterCIDRs,
    detectLocalMode: mode as DetectLocalMode,
    bridgeInterface: flags.podBridgeInterface ?? file?.detectLocal?.bridgeInterface ?? '',
    interfaceNamePrefix:
      flags.podInterfaceNamePrefix ?? file?.detectLocal?.interfaceNamePrefix ?? '',
    masqueradeAll: flags.masqueradeAll ?? file?.iptables?.masqueradeAll ?? base.masqueradeAll,
    masqueradeBit,
    localhostNodePorts:
      bool('--iptables-localhost-nodeports', flags.iptablesLocalhostNodeports) ??
      file?.iptables?.localhostNodePorts ??
      base.localhostNodePorts,
    nodePortAddresses,
    syncPeriodMs,
    minSyncPeriodMs,
    healthzBindAddress:
      flags.healthzBindAddress ?? file?.healthzBindAddress ?? base.healthzBindAddress,
    metricsBindAddress:
      flags.metricsBindAddress ?? file?.metricsBindAddress ?? base.metricsBindAddress,
    conntrack: {
      maxPerCore:
        num('--conntrack-max-per-core', flags.conntrackMaxPerCore, 0, 2 ** 31) ??
        fc?.maxPerCore ??
        base.conntrack.maxPerCore,
      min: num('--conntrack-min', flags.conntrackMin, 0, 2 ** 31) ?? fc?.min ?? base.conntrack.min,
      tcpEstablishedTimeoutSeconds:
        secs('--conntrack-tcp-timeout-established', flags.conntrackTcpTimeoutEstablished) ??
        fc?.tcpEstablishedTimeoutSeconds ??
        base.conntrack.tcpEstablishedTimeoutSeconds,
      tcpCloseWaitTimeoutSeconds:
        secs('--conntrack-tcp-timeout-close-wait', flags.conntrackTcpTimeoutCloseWait) ??
        fc?.tcpCloseWaitTimeoutSeconds ??
        base.conntrack.tcpCloseWaitTimeoutSeconds,
      tcpBeLiberal: flags.conntrackTcpBeLiberal ?? fc?.tcpBeLiberal ?? base.conntrack.tcpBeLiberal,
      udpTimeoutSeconds:
        secs('--conntrack-udp-timeout', flags.conntrackUdpTimeout) ?? fc?.udpTimeoutSeconds ?? 0,
      udpStreamTimeoutSeconds:
        secs('--conntrack-udp-timeout-stream', flags.conntrackUdpTimeoutStream) ??
        fc?.udpStreamTimeoutSeconds ??
        0,
    },
    canaryIntervalMs: dur('--canary-interval', flags.canaryInterval) ?? base.canaryIntervalMs,
    iptablesVariant: variant as ProxyDaemonConfig['iptablesVariant'],
  };
  if (errors.length > 0) throw new ValidationError(errors);
  return cfg;
}

async function runProxy(flags: ProxyFlags): Promise<string | undefined> {
  const flagMode = flags.proxyMode ?? flags.mode;
  const mode = flagMode ?? 'iptables';
  if (mode !== 'iptables')
    throw new SvcnetError(
      'INVALID_INPUT',
      `--proxy-mode: only iptables is served by this daemon, got ${JSON.stringify(mode)}`,
    );
  const file =
    flags.config !== undefined
      ? loadProxyConfigFile(flags.config, await readInput(flags.config))
      : undefined;
  if (
    file?.mode !== undefined &&
    file.mode !== '' &&
    file.mode !== 'iptables' &&
    flagMode === undefined
  )
    throw new SvcnetError(
      'INVALID_INPUT',
      `${flags.config ?? ''}: mode: only iptables is served by this daemon, got ${JSON.stringify(file.mode)}`,
    );
  const cfg = resolveProxyConfig(flags, file, hostname().toLowerCase());
  // Held while the daemon and the client library load (seconds), so a taken port exits 1 at
  // once; released just before the daemon binds them for real (whole or not at all).
  const hold =
    flags.cleanup === true
      ? undefined
      : await holdListenAddresses([
          ...(cfg.healthzBindAddress !== ''
            ? [
                {
                  what: '/healthz',
                  ...parseBindAddress(cfg.healthzBindAddress, '--healthz-bind-address'),
                  flag: '--healthz-bind-address',
                },
              ]
            : []),
          ...(cfg.metricsBindAddress !== ''
            ? [
                {
                  what: '/metrics',
                  ...parseBindAddress(cfg.metricsBindAddress, '--metrics-bind-address'),
                  flag: '--metrics-bind-address',
                },
              ]
            : []),
        ]);
  // The daemon, the kernel seams and the client library load once flags and files are good.
  const {
    ENDPOINT_SLICE_LABEL_SELECTOR,
    SERVICE_LABEL_SELECTOR,
    cleanupBackends,
    cleanupIptables,
    startProxyDaemon,
  } = await import('../proxy/daemon.js');
  const { RealExecer } = await import('../os/exec.js');
  const { RealSysctl } = await import('../os/sysctl.js');
  const log = daemonLogger('proxy', flags);
  const execer = new RealExecer();

  if (flags.cleanup === true) {
    const backends = await cleanupBackends(execer, ['IPv4', 'IPv6'], cfg.iptablesVariant);
    const removed: { family: IPFamily; chains: number; rules: number }[] = [];
    for (const b of backends) {
      try {
        removed.push(...(await cleanupIptables([b], log)));
      } catch (err) {
        if (b.family === 'IPv6')
          log.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'IPv6 cleanup skipped',
          );
        else throw err;
      }
    }
    log.flush();
    return removed
      .map((r) => `${r.family}: removed ${r.chains} chains, ${r.rules} rules`)
      .join('\n');
  }

  // --kubeconfig, else clientConnection.kubeconfig of --config, else $KUBECONFIG or in-cluster.
  const kubeconfig = flags.kubeconfig ?? (file?.kubeconfig !== '' ? file?.kubeconfig : undefined);
  const kc = await daemonKubeConfig(kubeconfig);
  const { ENDPOINT_SLICES, NODES, SERVICES, createInformer } = await import('../kube/client.js');
  const informers = {
    services: createInformer<Service>(kc, SERVICES, { labelSelector: SERVICE_LABEL_SELECTOR }),
    endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES, {
      labelSelector: ENDPOINT_SLICE_LABEL_SELECTOR,
    }),
    nodes: createInformer<Node>(kc, NODES, { fieldSelector: `metadata.name=${cfg.nodeName}` }),
  };
  await hold?.release();
  const daemon = await startProxyDaemon(cfg, {
    execer,
    sysctl: new RealSysctl(),
    clock: createRealClock(),
    log,
    informers,
    hostNetns: await isHostNetns(),
  });
  await new Promise<void>((resolve) => {
    const done = (signal: string): void => {
      log.info({ signal }, 'Shutting down');
      resolve();
    };
    process.once('SIGTERM', () => {
      done('SIGTERM');
    });
    process.once('SIGINT', () => {
      done('SIGINT');
    });
    // The informers' and servers' handles keep the process alive; nothing else to wait for.
  });
  await daemon.stop();
  log.flush();
  return undefined;
}

/** Registers `svcnet proxy`. */
export function registerProxyCommand(program: Command): void {
  const cmd = program
    .command('proxy')
    .description('kube-proxy-compatible Service proxy for one node (iptables mode)')
    .option(
      '--kubeconfig <file>',
      'kubeconfig of the API server (default: clientConnection.kubeconfig of --config, $KUBECONFIG, else in-cluster)',
    )
    .option('--proxy-mode <mode>', 'proxy mode (iptables)')
    .addOption(new Option('--mode <mode>', 'alias of --proxy-mode').hideHelp())
    .option('--hostname-override <node>', 'name of this node (default: the hostname)')
    .option('--config <file>', 'KubeProxyConfiguration file (flags given explicitly win)')
    .option('--cleanup', 'remove every rule and chain the proxy created, then exit')
    .option('--cluster-cidr <cidrs>', 'pod CIDR(s), comma-separated for dual-stack')
    .option(
      '--detect-local-mode <mode>',
      'ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix',
    )
    .option('--pod-bridge-interface <name>', 'bridge for detect-local-mode BridgeInterface')
    .option(
      '--pod-interface-name-prefix <prefix>',
      'prefix for detect-local-mode InterfaceNamePrefix',
    )
    .option('--masquerade-all', 'SNAT all traffic sent via Service cluster IPs')
    .option(
      '--iptables-masquerade-bit <bit>',
      'fwmark bit for packets to masquerade (0-31, default 14)',
    )
    .addOption(
      new Option(
        '--iptables-localhost-nodeports [bool]',
        'allow NodePorts on 127.0.0.1 (default true)',
      ),
    )
    .option('--iptables-sync-period <duration>', 'retry/periodic sync interval (default 30s)')
    .option('--iptables-min-sync-period <duration>', 'minimum time between syncs (default 1s)')
    .option('--nodeport-addresses <list>', 'CIDRs or primary/localhost/all for NodePorts')
    .option(
      '--healthz-bind-address <addr:port>',
      'healthz server (default 0.0.0.0:10256; empty disables)',
    )
    .option(
      '--metrics-bind-address <addr:port>',
      'metrics server (default 127.0.0.1:10249; empty disables)',
    )
    .option('--conntrack-max-per-core <n>', 'conntrack entries per CPU (host netns only)')
    .option('--conntrack-min <n>', 'minimum conntrack table size (host netns only)')
    .option(
      '--conntrack-tcp-timeout-established <duration>',
      'established TCP timeout (default 24h)',
    )
    .option('--conntrack-tcp-timeout-close-wait <duration>', 'CLOSE_WAIT timeout (default 1h)')
    .option('--conntrack-tcp-be-liberal', 'set nf_conntrack_tcp_be_liberal')
    .option('--conntrack-udp-timeout <duration>', 'UDP timeout (0 leaves the kernel value)')
    .option(
      '--conntrack-udp-timeout-stream <duration>',
      'UDP stream timeout (0 leaves the kernel value)',
    )
    .option(
      '--iptables-variant <auto|legacy|nft>',
      'iptables backend (default: detect like kube-proxy)',
    )
    .option('--canary-interval <duration>', 'how often to check for flushed rules (default 1s)');
  addLogFlags(cmd).action(
    // --cleanup is a command (prints what it removed); otherwise a daemon.
    async (flags: ProxyFlags) =>
      flags.cleanup === true
        ? action('proxy', runProxy)(flags)
        : daemonAction('proxy', runProxy)(flags),
  );
}
