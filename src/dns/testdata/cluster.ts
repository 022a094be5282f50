// A small cluster for the dig tests, the daemon test and the search-path integration test: a
// ClusterIP Service, a dual-stack one, a StatefulSet-style headless Service with hostnames,
// an ExternalName pointing inside the zone, and a 100-endpoint headless Service (for TC).

import { endpoint, service, slice } from '../../kube/testing.js';
import type { RecordIndex } from '../record-index.js';

const pg = [{ name: 'pg', protocol: 'TCP' as const, port: 5432 }];

export const web = service('web', { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'] });

export const dual = service('dual', {
  clusterIP: '10.96.0.11',
  clusterIPs: ['10.96.0.11', 'fd00::10'],
  ipFamilies: ['IPv4', 'IPv6'],
});

/** Headless, with hostnames db-0 and db-1 ready and db-2 not. */
export const db = service('db', { clusterIP: 'None', clusterIPs: ['None'], ports: pg });

export const dbSlice = slice(
  'db',
  [
    endpoint('10.244.1.5', { hostname: 'db-0', conditions: { ready: true } }),
    endpoint('10.244.2.6', { hostname: 'db-1', conditions: { ready: true } }),
    endpoint('10.244.3.7', { hostname: 'db-2', conditions: { ready: false } }),
  ],
  { name: 'db-abc', ports: pg },
);

export const alias = service('alias', {
  type: 'ExternalName',
  externalName: 'web.default.svc.cluster.local',
  ports: null,
});

export const many = service('many', { clusterIP: 'None', clusterIPs: ['None'], ports: null });

export const manySlice = slice(
  'many',
  Array.from({ length: 100 }, (_, i) => endpoint(`10.245.0.${i + 1}`)),
  { ports: [] },
);

/** Loads the test cluster into `index`. */
export function clusterFixture(index: RecordIndex): void {
  for (const svc of [web, dual, db]) index.upsertService(svc);
  index.upsertEndpointSlice(dbSlice);
  for (const svc of [alias, many]) index.upsertService(svc);
  index.upsertEndpointSlice(manySlice);
}
