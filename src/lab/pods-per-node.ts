// `lab up --pods-per-node N`: a workload of N netexec Pods per node, so the lab can be tried
// at the size where Service load-spreading and scale behaviour show (3 nodes × 100 Pods), with
// no manifest to write. A Deployment `netexec` in the default namespace (agnhost netexec, as
// Kubernetes' e2e tests run it: HTTP 8080, UDP 8081) with N × nodes replicas, spread over the
// nodes by the lab's scheduler, behind Service `netexec` (80/TCP → 8080, 81/UDP → 8081). Pure.

import type { KubeObject } from '../kube/types.js';

export const PODS_PER_NODE_NAME = 'netexec';
/** The most Pods per node `--pods-per-node` takes (a /24 podCIDR has 254 addresses). */
export const MAX_PODS_PER_NODE = 250;

/** The Deployment and Service; throws naming the flag when `perNode` is out of range. */
export function podsPerNodeObjects(perNode: number, nodes: number): KubeObject[] {
  if (!Number.isInteger(perNode) || perNode < 1 || perNode > MAX_PODS_PER_NODE)
    throw new Error(
      `--pods-per-node: must be 1-${String(MAX_PODS_PER_NODE)} (a node's /24 podCIDR), got ${String(perNode)}`,
    );
  const labels = { app: PODS_PER_NODE_NAME };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: PODS_PER_NODE_NAME, namespace: 'default', labels },
      spec: {
        replicas: perNode * nodes,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'agnhost',
                image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
                args: ['netexec', '--http-port=8080', '--udp-port=8081'],
                ports: [
                  { containerPort: 8080, protocol: 'TCP' },
                  { containerPort: 8081, protocol: 'UDP' },
                ],
                readinessProbe: { httpGet: { path: '/readyz', port: 8080 }, periodSeconds: 5 },
              },
            ],
          },
        },
      },
    } as KubeObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: PODS_PER_NODE_NAME, namespace: 'default', labels },
      spec: {
        selector: labels,
        ports: [
          { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
          { name: 'udp', port: 81, targetPort: 8081, protocol: 'UDP' },
        ],
      },
    } as KubeObject,
  ];
}
