import { test } from 'node:test';
import assert from 'node:assert/strict';
import { categorizeEndpoints } from './categorize.js';
import { servicePortsFor } from './service-port.js';
import type { ServicePortInfo } from './service-port.js';
import type { ServiceSpec } from '../../kube/types.js';
import type { EndpointInfo } from './endpoint.js';
import { service } from '../../kube/testing.js';

function port(spec: Partial<ServiceSpec>): ServicePortInfo {
  const p = servicePortsFor(service('ns/s', { clusterIP: '10.96.0.1', ...spec }), 'IPv4').ports[0];
  assert.ok(p);
  return p;
}

/** An EndpointInfo: ready, serving, remote, port 80. */
function info(ip: string, more: Partial<EndpointInfo> = {}): EndpointInfo {
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

const node = { nodeName: 'me', zone: 'zone-a' };
const ips = (eps: readonly EndpointInfo[]) => eps.map((e) => e.ip).join(',');

const local = (ip: string, more: Partial<EndpointInfo> = {}) =>
  info(ip, { isLocal: true, ...more });
const terminating = { ready: false, serving: true, terminating: true };

test('categorizeEndpoints: traffic policies and the terminating fallback', () => {
  const cases: {
    name: string;
    spec: Partial<ServiceSpec>;
    eps: EndpointInfo[];
    cluster: string;
    local: string;
    all: string;
    any: boolean;
  }[] = [
    {
      name: 'Cluster policy uses ready endpoints only',
      spec: {},
      eps: [info('1.0.0.1'), info('1.0.0.2', { ready: false, serving: false }), local('1.0.0.3')],
      cluster: '1.0.0.1,1.0.0.3',
      local: '',
      all: '1.0.0.1,1.0.0.3',
      any: true,
    },
    {
      name: 'no ready endpoints: fall back to serving+terminating ones',
      spec: {},
      eps: [
        info('1.0.0.1', terminating),
        info('1.0.0.2', { ready: false, serving: false, terminating: true }),
      ],
      cluster: '1.0.0.1',
      local: '',
      all: '1.0.0.1',
      any: true,
    },
    {
      name: 'iTP Local: local ready endpoints only',
      spec: { internalTrafficPolicy: 'Local' },
      eps: [info('1.0.0.1'), local('1.0.0.2')],
      cluster: '',
      local: '1.0.0.2',
      all: '1.0.0.2',
      any: true,
    },
    {
      name: 'iTP Local without local endpoints still reports endpoints elsewhere',
      spec: { internalTrafficPolicy: 'Local' },
      eps: [info('1.0.0.1')],
      cluster: '',
      local: '',
      all: '',
      any: true,
    },
    {
      name: 'eTP Local falls back to local terminating endpoints while remote ones are ready',
      spec: {
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        ports: [{ port: 80, nodePort: 30001 }],
      },
      eps: [info('1.0.0.1'), local('1.0.0.2', terminating)],
      cluster: '1.0.0.1',
      local: '1.0.0.2',
      all: '1.0.0.1,1.0.0.2',
      any: true,
    },
    {
      name: 'nothing usable anywhere',
      spec: {},
      eps: [info('1.0.0.1', { ready: false, serving: false })],
      cluster: '',
      local: '',
      all: '',
      any: false,
    },
  ];
  for (const c of cases) {
    const r = categorizeEndpoints(c.eps, port(c.spec), node);
    assert.equal(ips(r.clusterEndpoints), c.cluster, `${c.name}: cluster`);
    assert.equal(ips(r.localEndpoints), c.local, `${c.name}: local`);
    assert.equal(
      ips([...r.allReachableEndpoints].sort((a, b) => a.ip.localeCompare(b.ip))),
      c.all,
      `${c.name}: all`,
    );
    assert.equal(r.hasAnyEndpoints, c.any, `${c.name}: hasAnyEndpoints`);
  }
});

test('categorizeEndpoints: topology hints and trafficDistribution', () => {
  const z = (ip: string, zone: string, nodes: string[] = []) =>
    info(ip, { zoneHints: [zone], nodeHints: nodes });
  const cases: {
    name: string;
    spec: Partial<ServiceSpec>;
    eps: EndpointInfo[];
    cluster: string;
    mode: string;
  }[] = [
    {
      name: 'every endpoint hinted, some for my zone: use those',
      spec: { trafficDistribution: 'PreferClose' },
      eps: [z('1.0.0.1', 'zone-a'), z('1.0.0.2', 'zone-b')],
      cluster: '1.0.0.1',
      mode: 'PreferSameZone',
    },
    {
      name: 'one endpoint without hints: ignore hints',
      spec: {},
      eps: [z('1.0.0.1', 'zone-a'), info('1.0.0.2')],
      cluster: '1.0.0.1,1.0.0.2',
      mode: '',
    },
    {
      name: 'no endpoint hinted for my zone: ignore hints',
      spec: {},
      eps: [z('1.0.0.1', 'zone-b'), z('1.0.0.2', 'zone-c')],
      cluster: '1.0.0.1,1.0.0.2',
      mode: '',
    },
    {
      name: 'PreferSameNode with node hints for me',
      spec: { trafficDistribution: 'PreferSameNode' },
      eps: [z('1.0.0.1', 'zone-a', ['other']), z('1.0.0.2', 'zone-a', ['me'])],
      cluster: '1.0.0.2',
      mode: 'PreferSameNode',
    },
    {
      name: 'PreferSameNode without a hint for me falls back to zones',
      spec: { trafficDistribution: 'PreferSameNode' },
      eps: [z('1.0.0.1', 'zone-a', ['other']), z('1.0.0.2', 'zone-b', ['other2'])],
      cluster: '1.0.0.1',
      mode: 'PreferSameZone',
    },
  ];
  for (const c of cases) {
    const r = categorizeEndpoints(c.eps, port(c.spec), node);
    assert.equal(ips(r.clusterEndpoints), c.cluster, c.name);
    assert.equal(r.topologyMode, c.mode, c.name);
  }
});
