// Builders of Services and EndpointSlices for the proxy unit tests (shared by model/ and
// iptables/ tests): compact, with kube-proxy-relevant fields only. Not used at run time.

import type {
  Endpoint,
  EndpointSlice,
  Service,
  ServicePort,
  ServiceSpec,
} from '../../kube/types.js';
import type { EndpointInfo } from './endpoint.js';

/** A Service `ns/name` with the given spec (ports default to one TCP port 80 named http). */
export function svc(
  key: string,
  spec: Partial<ServiceSpec> & { ports?: ServicePort[] },
  extra: Partial<Service> = {},
): Service {
  const [namespace = 'default', name = ''] = key.split('/');
  return {
    apiVersion: 'v1',
    kind: 'Service',
    ...extra,
    metadata: { namespace, name, ...extra.metadata },
    spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }], ...spec },
  };
}

/** An endpoint: `ip`, optionally `@node`, with conditions/hints. */
export function ep(ip: string, more: Partial<Endpoint> = {}): Endpoint {
  return { addresses: [ip], ...more };
}

/** An EndpointSlice `ns/service-n` for Service `ns/service`. */
export function slice(
  serviceKey: string,
  endpoints: Endpoint[],
  opts: {
    n?: number;
    ports?: EndpointSlice['ports'];
    addressType?: EndpointSlice['addressType'];
  } = {},
): EndpointSlice {
  const [namespace = 'default', service = ''] = serviceKey.split('/');
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace,
      name: `${service}-${opts.n ?? 1}`,
      labels: { 'kubernetes.io/service-name': service },
    },
    addressType: opts.addressType ?? 'IPv4',
    endpoints,
    ports: opts.ports ?? [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}

/** An EndpointInfo for categorize tests. */
export function info(ip: string, more: Partial<EndpointInfo> = {}): EndpointInfo {
  return {
    ip,
    port: 80,
    endpoint: `${ip}:80`,
    isLocal: false,
    ready: true,
    serving: true,
    terminating: false,
    zoneHints: [],
    nodeHints: [],
    ...more,
  };
}
