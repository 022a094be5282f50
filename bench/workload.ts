// The synthetic cluster the proxy benches plan: Service i in namespace ns(i % 100) with
// ClusterIP 172.x.y.z and one TCP port 80 (every tenth a NodePort), and its EndpointSlice of
// pod addresses 10.x.y.z spread over five nodes. Shared so the iptables and nftables figures
// describe the same workload.

import { endpoint, service as serviceOf, slice as sliceOf } from '../src/kube/testing.js';
import type { EndpointSlice, Service } from '../src/kube/types.js';

/** The i-th address of a /8 starting at `base`. */
export function ip(base: number, i: number): string {
  return `${String(base)}.${String((i >> 16) & 255)}.${String((i >> 8) & 255)}.${String(i & 255)}`;
}

export function benchService(i: number): Service {
  return serviceOf(`ns${String(i % 100)}/svc${String(i)}`, {
    clusterIP: ip(172, i + 1),
    ports: [
      {
        name: 'http',
        port: 80,
        protocol: 'TCP',
        ...(i % 10 === 0 ? { nodePort: 30000 + (i % 2000) } : {}),
      },
    ],
    ...(i % 10 === 0 ? { type: 'NodePort' as const } : {}),
  });
}

/** Service i's slice of `endpoints` pods; `salt` shifts the addresses (an endpoint change). */
export function benchSlice(i: number, endpoints: number, salt = 0): EndpointSlice {
  return sliceOf(
    `ns${String(i % 100)}/svc${String(i)}`,
    Array.from({ length: endpoints }, (_, e) =>
      endpoint(ip(10, i * endpoints + e + salt), { nodeName: `node-${String(e % 5)}` }),
    ),
  );
}
