// `svcnet proxy`: the kube-proxy-compatible daemon for one node, in iptables, nftables or ipvs
// mode (`--proxy-mode`, alias `--mode`, or the file's `mode:`). Flags mirror kube-proxy's; settings
// come from defaults, then the KubeProxyConfiguration file (`--config`), then flags given
// explicitly on the command line. `--cleanup` removes every rule, chain and table any mode of
// the proxy created and exits. Logs go to stderr (text on a terminal, JSON
// otherwise). A bad flag, config or kubeconfig exits 2 and a listener that cannot bind exits 1,
// each with one line, before any rule is written. The --config file is watched as kube-proxy
// watches it (proxy/config-watch.ts): new content ends the daemon the normal way and exits 1
// (2 if the new content is not a valid configuration), for its DaemonSet to restart it.

import { waitForTermination } from '../os/process.js';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { Option } from 'commander';
import type { EndpointSlice, Node, Service, ServiceCIDR } from '../kube/types.js';
import { realClock } from '../util/clock.js';
import {
  DAEMON_PROXY_MODES,
  parseKubeProxyConfiguration,
  requireBuiltProxyMode,
  resolveProxyConfig,
} from '../proxy/config.js';
import type { ProxyConfigFlags } from '../proxy/config.js';
import { configChangeExit, watchConfigFile } from '../proxy/config-watch.js';
import { isHostNetns } from '../proxy/host-netns.js';
import { parseBindAddress } from '../proxy/listen.js';
import { slimForProxy } from '../proxy/slim.js';
import { holdListenAddresses } from '../util/listen-hold.js';
import {
  addLogFlags,
  daemonAction,
  daemonCommand,
  daemonKubeConfig,
  daemonLogger,
} from './daemon.js';
import { action, readInput } from './run.js';

interface ProxyFlags extends ProxyConfigFlags {
  kubeconfig?: string;
  mode?: string;
  proxyMode?: string;
  config?: string;
  cleanup?: boolean;
  logLevel?: string;
  v?: string;
  loggingFormat?: string;
}

async function runProxy(flags: ProxyFlags): Promise<string | undefined> {
  // --proxy-mode (or --mode) wins over the file's mode; kernelspace is refused
  // (exit 2) before anything loads: a configuration that asks for them must never get rules
  // of another mode silently.
  const flagMode = flags.proxyMode ?? flags.mode;
  if (flagMode !== undefined) requireBuiltProxyMode(flagMode, '--proxy-mode', DAEMON_PROXY_MODES);
  const configText = flags.config !== undefined ? await readInput(flags.config) : undefined;
  // The file's configuration and the daemon's (flags over file): at start, and again for each
  // new content of the file, which must pass the same checks.
  const load = (text: string | undefined) => {
    const file =
      text !== undefined ? parseKubeProxyConfiguration(text, flags.config ?? '') : undefined;
    const mode =
      flagMode ??
      requireBuiltProxyMode(file?.mode ?? '', `${flags.config ?? ''}: mode`, DAEMON_PROXY_MODES);
    const cfg = resolveProxyConfig({ ...flags, proxyMode: mode }, file, hostname().toLowerCase());
    return { file, cfg };
  };
  const { file, cfg } = load(configText);
  // A changed --config ends the daemon (as kube-proxy's file watch does) so it restarts with it.
  const watch =
    flags.cleanup !== true && flags.config !== undefined && flags.config !== '-'
      ? watchConfigFile({
          path: flags.config,
          loaded: configText ?? '',
          validate: (text) => load(text),
          clock: realClock,
          read: (p) => readInput(p),
        })
      : undefined;
  // ipvs mode on a kernel without ip_vs: one line and exit 1, before anything is touched
  // (not even the other modes' leftovers).
  if (cfg.mode === 'ipvs' && flags.cleanup !== true) {
    const { requireIpvs } = await import('../proxy/dataplane.js');
    await requireIpvs();
  }
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
  const { ENDPOINT_SLICE_LABEL_SELECTOR, SERVICE_LABEL_SELECTOR, startProxyDaemon } =
    await import('../proxy/daemon.js');
  const { cleanupLeftovers, formatCleanup, realCleanupSeams } = await import('../proxy/cleanup.js');
  const { RealExecer } = await import('../os/exec.js');
  const { RealSysctl } = await import('../os/sysctl.js');
  const log = daemonLogger('proxy', flags);
  const execer = new RealExecer();

  if (flags.cleanup === true) {
    // Every mode's state goes, whatever the mode, as kube-proxy's --cleanup does.
    const removed = await cleanupLeftovers(
      'all',
      realCleanupSeams(execer, cfg.iptablesVariant),
      log,
    );
    log.flush();
    return formatCleanup(removed);
  }

  // --kubeconfig, else clientConnection.kubeconfig of --config, else $KUBECONFIG or in-cluster.
  const fileKubeconfig = file?.clientConnection.kubeconfig ?? '';
  const kubeconfig = flags.kubeconfig ?? (fileKubeconfig !== '' ? fileKubeconfig : undefined);
  const kc = await daemonKubeConfig(kubeconfig);
  const { ENDPOINT_SLICES, NODES, SERVICES, SERVICE_CIDRS, createInformer } =
    await import('../kube/client.js');
  const informers = {
    services: createInformer<Service>(kc, SERVICES, {
      labelSelector: SERVICE_LABEL_SELECTOR,
      slim: slimForProxy,
    }),
    endpointSlices: createInformer<EndpointSlice>(kc, ENDPOINT_SLICES, {
      labelSelector: ENDPOINT_SLICE_LABEL_SELECTOR,
      slim: slimForProxy,
    }),
    nodes: createInformer<Node>(kc, NODES, { fieldSelector: `metadata.name=${cfg.nodeName}` }),
    // nftables mode's drop rule for unallocated ClusterIPs; iptables mode reads none.
    ...(cfg.mode === 'nftables'
      ? { serviceCIDRs: createInformer<ServiceCIDR>(kc, SERVICE_CIDRS) }
      : {}),
  };
  await hold?.release();
  const daemon = await startProxyDaemon(cfg, {
    execer,
    sysctl: new RealSysctl(),
    clock: realClock,
    log,
    informers,
    hostNetns: await isHostNetns(),
  });
  const ended = await Promise.race([
    waitForTermination(),
    ...(watch ? [watch.changed.then((change) => configChangeExit(change, log))] : []),
  ]);
  watch?.close();
  if (typeof ended === 'string') log.info({ signal: ended }, 'Shutting down');
  await daemon.stop();
  log.flush();
  if (typeof ended !== 'string') throw ended;
  return undefined;
}

/** Registers `svcnet proxy`. */
export function registerProxyCommand(program: Command): void {
  const cmd = daemonCommand(
    program,
    'proxy',
    'kube-proxy-compatible Service proxy for one node (iptables, nftables or ipvs mode)',
    'kubeconfig of the API server (default: clientConnection.kubeconfig of --config, $KUBECONFIG, else in-cluster)',
  )
    .option('--proxy-mode <mode>', 'proxy mode: iptables (default), nftables or ipvs')
    .addOption(new Option('--mode <mode>', 'alias of --proxy-mode').hideHelp())
    .option('--hostname-override <node>', 'name of this node (default: the hostname)')
    .option(
      '--config <file>',
      'KubeProxyConfiguration file (flags given explicitly win); exits when its content changes',
    )
    .option('--cleanup', 'remove every rule, chain and table of every proxy mode, then exit')
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
    .option(
      '--iptables-sync-period <duration>',
      'periodic sync interval, iptables/nftables modes (default 30s)',
    )
    .option(
      '--iptables-min-sync-period <duration>',
      'minimum time between syncs, iptables/nftables modes (default 1s)',
    )
    .option(
      '--ipvs-scheduler <name>',
      'ipvs mode: rr (default), wrr, lc, wlc, lblc, lblcr, sh, dh, sed or nq',
    )
    .option('--ipvs-sync-period <duration>', 'ipvs mode: periodic sync interval (default 30s)')
    .option(
      '--ipvs-min-sync-period <duration>',
      'ipvs mode: minimum time between syncs (default 0s)',
    )
    .option(
      '--ipvs-exclude-cidrs <cidrs>',
      'ipvs mode: CIDRs whose virtual servers are never removed',
    )
    .addOption(
      new Option('--ipvs-strict-arp [bool]', 'ipvs mode: set arp_ignore=1 and arp_announce=2'),
    )
    .option(
      '--ipvs-tcp-timeout <duration>',
      'ipvs mode: idle TCP session timeout (0 keeps the kernel value)',
    )
    .option(
      '--ipvs-tcpfin-timeout <duration>',
      'ipvs mode: TCP timeout after FIN (0 keeps the kernel value)',
    )
    .option('--ipvs-udp-timeout <duration>', 'ipvs mode: UDP timeout (0 keeps the kernel value)')
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
      "iptables backend (default: the config's iptables.svcnetVariant, else auto: detect like kube-proxy's image)",
    )
    .option(
      '--canary-interval <duration>',
      'how often to check for flushed rules (default: the sync period, 30s)',
    );
  addLogFlags(cmd).action(
    // --cleanup is a command (prints what it removed); otherwise a daemon.
    async (flags: ProxyFlags) =>
      flags.cleanup === true
        ? action('proxy', runProxy)(flags)
        : daemonAction('proxy', runProxy)(flags),
  );
}
