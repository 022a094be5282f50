// What every lab cluster gets besides the nodes, as manifests: the cluster DNS, like kind's
// CoreDNS addon. `svcnet dns` runs as two Pods of the kube-system/coredns Deployment (the
// node agent runs a container whose command is `svcnet dns` as that subcommand), behind the
// kube-dns Service at the plan's DNS address. The Pods use dnsPolicy Default, so their own
// lookups go to the node's resolver rather than to themselves. A deleted DNS Pod goes into
// lameduck as CoreDNS with kubeadm's `health { lameduck 5s }` (it answers while /ready fails
// and its endpoint is terminating), so its grace period is the default 30 s, well above the
// lameduck, lest the node agent's SIGKILL cut it short. A flannel lab also gets kube-flannel's
// ConfigMap kube-system/kube-flannel-cfg, whose net-conf.json every node's `svcnet flannel`
// reads: the cluster network and the backend (vxlan, or host-gw). Pure.

import type { KubeObject } from '../kube/types.js';
import { NET_CONF_CONFIGMAP } from '../podnet/parse-net-conf.js';
import { podNetworkOf, type LabPlan } from './topology.js';

export const DNS_LABELS = { 'k8s-app': 'kube-dns' } as const;

/** `--lameduck` of the DNS Pods, and their grace period (must exceed it). */
export const DNS_LAMEDUCK = '5s';
export const DNS_GRACE_SECONDS = 30;

export function dnsAddon(plan: LabPlan, domain = 'cluster.local'): KubeObject[] {
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: 'kube-dns',
      namespace: 'kube-system',
      labels: { ...DNS_LABELS, 'kubernetes.io/name': 'CoreDNS' },
    },
    spec: {
      selector: { ...DNS_LABELS },
      clusterIP: plan.dnsServiceIP,
      ports: [
        { name: 'dns', port: 53, targetPort: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, targetPort: 53, protocol: 'TCP' },
        { name: 'metrics', port: 9153, targetPort: 9153, protocol: 'TCP' },
      ],
    },
  };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'coredns', namespace: 'kube-system', labels: { ...DNS_LABELS } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { ...DNS_LABELS } },
      template: {
        metadata: { labels: { ...DNS_LABELS } },
        spec: {
          dnsPolicy: 'Default',
          terminationGracePeriodSeconds: DNS_GRACE_SECONDS,
          containers: [
            {
              name: 'coredns',
              image: 'svcnet',
              command: ['svcnet', 'dns'],
              // Two replicas already; one process each keeps the lab's memory down.
              args: [
                '--listen',
                '0.0.0.0:53',
                '--zone',
                domain,
                '--lameduck',
                DNS_LAMEDUCK,
                '--workers',
                '1',
              ],
              ports: [
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
                { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                { name: 'metrics', containerPort: 9153, protocol: 'TCP' },
              ],
              readinessProbe: {
                httpGet: { path: '/ready', port: 8181 },
                periodSeconds: 1,
                timeoutSeconds: 1,
              },
            },
          ],
        },
      },
    },
  };
  return [service, deployment] as KubeObject[];
}

/** kube-flannel-cfg for a flannel lab (none for the other pod networks). */
export function flannelAddon(plan: LabPlan): KubeObject[] {
  const net = podNetworkOf(plan);
  if (net !== 'flannel' && net !== 'flannel-host-gw') return [];
  const backend = net === 'flannel' ? { Type: 'vxlan', VNI: 1, Port: 8472 } : { Type: 'host-gw' };
  const { namespace, name, key } = NET_CONF_CONFIGMAP;
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels: { app: 'flannel', tier: 'node' } },
    data: {
      [key]: `${JSON.stringify({ Network: plan.clusterCIDR, Backend: backend }, null, 2)}\n`,
    },
  };
  return [configMap] as KubeObject[];
}
