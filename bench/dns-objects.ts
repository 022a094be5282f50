// The DNS bench's cluster: `n` Services in namespace `bench`, each with a 3-endpoint
// EndpointSlice, built the same way by the bench (for NSD's zone file) and by its server
// child (bench/dns-serve.ts), so NSD and svcnet answer the same names.

import { endpoint, service as serviceOf, slice as sliceOf } from '../src/kube/testing.js';
import type { EndpointSlice, Service } from '../src/kube/types.js';

export function benchService(i: number, ns: string): Service {
  const ip = `10.96.${(i >> 8) & 255}.${i & 255}`;
  return serviceOf(`${ns}/svc${i}`, { clusterIP: ip, clusterIPs: [ip] });
}

export function benchSlice(i: number, ns: string, endpoints: number): EndpointSlice {
  return sliceOf(
    `${ns}/svc${i}`,
    Array.from({ length: endpoints }, (_, k) =>
      endpoint(`10.${64 + ((i >> 12) & 63)}.${(i >> 4) & 255}.${((i & 15) << 4) | (k & 15)}`, {
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: `svc${i}-pod-${k}` },
        nodeName: `node-${k}`,
      }),
    ),
    { name: `svc${i}-abcde` },
  );
}

/** The QPS bench's objects: `n` Services with 3 endpoints each in namespace `bench`. */
export function benchCluster(n: number): { services: Service[]; slices: EndpointSlice[] } {
  return {
    services: Array.from({ length: n }, (_, i) => benchService(i, 'bench')),
    slices: Array.from({ length: n }, (_, i) => benchSlice(i, 'bench', 3)),
  };
}
