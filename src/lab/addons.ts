// What every lab cluster gets besides the nodes, as manifests: the cluster DNS, like kind's
// CoreDNS addon. `svcnet dns` runs as two Pods of the kube-system/coredns Deployment (the
// node agent runs a container whose command is `svcnet dns` as that subcommand), behind the
// kube-dns Service at the plan's DNS address. The Pods use dnsPolicy Default, so their own
// lookups go to the node's resolver rather than to themselves. Pure.

import type { KubeObject } from '../kube/types.js';
import type { LabPlan } from './topology.js';

export const DNS_LABELS = { 'k8s-app': 'kube-dns' } as const;

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
          terminationGracePeriodSeconds: 5,
          containers: [
            {
              name: 'coredns',
              image: 'svcnet',
              command: ['svcnet', 'dns'],
              args: ['--listen', '0.0.0.0:53', '--zone', domain],
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
