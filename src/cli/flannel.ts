// `svcnet flannel --kubeconfig F --node NAME [--iface IF] [--backend vxlan|host-gw]
// [--net-conf FILE] [--subnet-file FILE] [--ip-masq]`: the pod-network agent, like flanneld
// with `--kube-subnet-mgr`. net-conf.json comes from --net-conf, else from the ConfigMap
// kube-system/kube-flannel-cfg; a bad one (or a bad flag) exits 2 naming the field before
// anything in the kernel changes. Runs in the node's network namespace until SIGINT/SIGTERM
// (the device and entries stay, as flanneld leaves them).

import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { SvcnetError } from '../errors.js';
import type { Node } from '../kube/types.js';
import { RealExecer } from '../os/exec.js';
import { RealIp } from '../os/ip.js';
import { waitForTermination } from '../os/process.js';
import { DEFAULT_SUBNET_FILE } from '../podnet/names.js';
import {
  BACKEND_TYPES,
  NET_CONF_CONFIGMAP,
  parseNetConf,
  type FlannelBackendType,
} from '../podnet/parse-net-conf.js';
import {
  addLogFlags,
  daemonAction,
  daemonCommand,
  daemonKubeConfig,
  daemonLogger,
} from './daemon.js';
import { readInput } from './run.js';

interface FlannelOptions {
  kubeconfig?: string;
  node?: string;
  iface?: string;
  backend?: string;
  netConf?: string;
  subnetFile: string;
  ipMasq?: boolean;
  v?: string;
  loggingFormat?: string;
  logLevel?: string;
}

function parseBackendFlag(text: string | undefined): FlannelBackendType | undefined {
  if (text === undefined) return undefined;
  if ((BACKEND_TYPES as readonly string[]).includes(text)) return text as FlannelBackendType;
  throw new SvcnetError(
    'INVALID_INPUT',
    `--backend: unsupported backend "${text}" (${BACKEND_TYPES.join(', ')})`,
  );
}

async function runFlannel(opts: FlannelOptions): Promise<undefined> {
  const backend = parseBackendFlag(opts.backend);
  const nodeName = opts.node ?? process.env.NODE_NAME;
  if (nodeName === undefined || nodeName === '')
    throw new SvcnetError('INVALID_INPUT', '--node: required (or $NODE_NAME)');
  // A file's net-conf is checked before the client library loads or anything is touched.
  const fileConf =
    opts.netConf === undefined
      ? undefined
      : parseNetConf(await readInput(opts.netConf), opts.netConf, backend);
  const log = daemonLogger('flannel', opts);
  const kc = await daemonKubeConfig(opts.kubeconfig);
  const { kubeRequest } = await import('../kube/rest.js');
  const { HttpKubeClient } = await import('../kube/api-client.js');
  const { createInformer, NODES } = await import('../kube/client.js');
  const { FlannelAgent } = await import('../podnet/flannel-agent.js');
  let conf = fileConf;
  if (conf === undefined) {
    const { namespace, name, key } = NET_CONF_CONFIGMAP;
    const where = `ConfigMap ${namespace}/${name}`;
    let cm;
    try {
      cm = await kubeRequest<{ data?: Record<string, string> }>(
        kc,
        `/api/v1/namespaces/${namespace}/configmaps/${name}`,
      );
    } catch (e) {
      throw new SvcnetError('API_FAILED', `${where}: ${(e as Error).message}`, { cause: e });
    }
    const text = cm.data?.[key];
    if (text === undefined)
      throw new SvcnetError('INVALID_INPUT', `${where}: data.${key}: required`);
    conf = parseNetConf(text, `${where} data.${key}`, backend);
  }
  const execer = new RealExecer();
  const client = new HttpKubeClient(kc);
  const agent = new FlannelAgent({
    nodeName,
    conf,
    iface: opts.iface,
    subnetFile: opts.subnetFile,
    ipMasq: opts.ipMasq === true,
    ip: new RealIp(execer),
    execer,
    nodes: createInformer<Node>(kc, NODES),
    patchNode: (name, patch) => client.patch('Node', '', name, patch),
    // Whole or not at all, as flanneld writes it: the node's CNI plugin may read it any time.
    writeFile: async (path, text) => {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(`${path}.tmp`, text);
      await rename(`${path}.tmp`, path);
    },
    log,
  });
  await agent.start();
  await waitForTermination();
  log.info({}, 'Flannel stopping');
  await agent.stop();
  return undefined;
}

/** Registers `svcnet flannel`. */
export function registerFlannelCommand(program: Command): void {
  const cmd = daemonCommand(
    program,
    'flannel',
    "pod-network agent like flanneld's Kubernetes subnet manager: VXLAN overlay or host-gw routes between the Nodes' podCIDRs",
    'kubeconfig of the API server (default: $KUBECONFIG, else the in-cluster config)',
  )
    .option('--node <name>', 'this Node (default: $NODE_NAME)')
    .option('--iface <name>', "uplink device (default: the default route's device)")
    .option(
      '--backend <type>',
      `backend, wins over net-conf's Backend.Type: ${BACKEND_TYPES.join(' or ')}`,
    )
    .option(
      '--net-conf <file>',
      'net-conf.json file (default: the ConfigMap kube-system/kube-flannel-cfg, key net-conf.json)',
    )
    .option(
      '--subnet-file <file>',
      "where to write subnet.env for flannel's CNI plugin",
      DEFAULT_SUBNET_FILE,
    )
    .option('--ip-masq', 'masquerade pod traffic leaving the cluster network (flanneld --ip-masq)');
  addLogFlags(cmd).action(daemonAction('flannel', runFlannel));
}
