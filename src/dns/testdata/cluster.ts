// A small cluster for the dig tests, the daemon test and the search-path integration test: a
// ClusterIP Service, a dual-stack one, a StatefulSet-style headless Service with hostnames,
// an ExternalName pointing inside the zone, and a 100-endpoint headless Service (for TC).

import type { EndpointSlice, Service } from '../../kube/types.js';
import type { RecordIndex } from '../record-index.js';

export const web: Service = {
  metadata: { name: 'web', namespace: 'default' },
  spec: { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ name: 'http', protocol: 'TCP', port: 80 }] },
};

export const dual: Service = {
  metadata: { name: 'dual', namespace: 'default' },
  spec: {
    clusterIP: '10.96.0.11',
    clusterIPs: ['10.96.0.11', 'fd00::10'],
    ipFamilies: ['IPv4', 'IPv6'],
    ports: [{ name: 'http', protocol: 'TCP', port: 80 }],
  },
};

/** Headless, with hostnames db-0 and db-1 ready and db-2 not. */
export const db: Service = {
  metadata: { name: 'db', namespace: 'default' },
  spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ name: 'pg', protocol: 'TCP', port: 5432 }] },
};

export const dbSlice: EndpointSlice = {
  metadata: { name: 'db-abc', namespace: 'default', labels: { 'kubernetes.io/service-name': 'db' } },
  addressType: 'IPv4',
  endpoints: [
    { addresses: ['10.244.1.5'], hostname: 'db-0', conditions: { ready: true } },
    { addresses: ['10.244.2.6'], hostname: 'db-1', conditions: { ready: true } },
    { addresses: ['10.244.3.7'], hostname: 'db-2', conditions: { ready: false } },
  ],
  ports: [{ name: 'pg', protocol: 'TCP', port: 5432 }],
};

export const alias: Service = {
  metadata: { name: 'alias', namespace: 'default' },
  spec: { type: 'ExternalName', externalName: 'web.default.svc.cluster.local' },
};

export const many: Service = {
  metadata: { name: 'many', namespace: 'default' },
  spec: { clusterIP: 'None', clusterIPs: ['None'] },
};

export const manySlice: EndpointSlice = {
  metadata: { name: 'many-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'many' } },
  addressType: 'IPv4',
  endpoints: Array.from({ length: 100 }, (_, i) => ({ addresses: [`10.245.0.${i + 1}`] })),
  ports: [],
};

/** Loads the test cluster into `index`. */
export function clusterFixture(index: RecordIndex): void {
  for (const svc of [web, dual, db]) index.upsertService(svc);
  index.upsertEndpointSlice(dbSlice);
  for (const svc of [alias, many]) index.upsertService(svc);
  index.upsertEndpointSlice(manySlice);
}
