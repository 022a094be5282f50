import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EndpointSlice, Service } from '../../kube/types.js';
import { DEFAULT_IPVS_OPTIONS } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import { planIpvsFromObjects } from './plan-objects.js';
import { ipsetName } from './names.js';
import { renderIpvsIptables, ruleJump, ruleMatchSet } from './rules.js';

function svc(name: string, spec: Record<string, unknown>): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'ns' }, spec };
}

function slice(service: string, endpoints: unknown[], port = 80): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service}-1`,
      namespace: 'ns',
      labels: { 'kubernetes.io/service-name': service },
    },
    addressType: 'IPv4',
    endpoints,
    ports: [{ name: 'p', port, protocol: 'TCP' }],
  } as EndpointSlice;
}

const opts: IpvsProxierOptions = {
  ...DEFAULT_IPVS_OPTIONS,
  nodeName: 'node-a',
  nodeIP: '192.168.0.10',
  nodePortIPs: ['192.168.0.10'],
  localAddresses: ['192.168.0.10'],
};

const PORT = { name: 'p', port: 80, protocol: 'TCP' };

test('ClusterIP, NodePort, externalIP and LB IP each get a virtual server with the endpoints', () => {
  const s = svc('web', {
    type: 'LoadBalancer',
    clusterIP: '10.96.0.10',
    externalIPs: ['203.0.113.5', '192.168.0.10'],
    ports: [{ ...PORT, nodePort: 30080 }],
  });
  s.status = { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } };
  const e = slice('web', [
    { addresses: ['10.244.1.3'], conditions: { ready: true }, nodeName: 'node-b' },
    { addresses: ['10.244.0.2'], conditions: { ready: true }, nodeName: 'node-a' },
  ]);
  const { plan } = planIpvsFromObjects([s], [e], opts, 'IPv4');
  const vs = plan.virtualServers.map((v) => `${v.virtualServer.address}:${v.virtualServer.port}`);
  assert.deepEqual(vs, [
    '10.96.0.10:80',
    '203.0.113.5:80',
    '192.168.0.10:80',
    '198.51.100.7:80',
    '192.168.0.10:30080',
  ]);
  for (const v of plan.virtualServers) {
    assert.equal(v.virtualServer.scheduler, 'rr');
    assert.deepEqual(
      v.realServers.map((r) => `${r.address}:${r.port} ${r.weight} ${r.forward}`),
      ['10.244.0.2:80 1 Masq', '10.244.1.3:80 1 Masq'],
    );
  }
  // The externalIP that is a node address is not bound on kube-ipvs0; NodePorts never are.
  assert.deepEqual(plan.boundAddresses, ['10.96.0.10', '198.51.100.7', '203.0.113.5']);
  const set = (n: string) => plan.ipsets.find((x) => x.name === n)?.entries.map((x) => x.value);
  assert.deepEqual(set('KUBE-NODE-PORT-TCP'), ['30080']);
  assert.deepEqual(set('KUBE-LOOP-BACK'), ['10.244.0.2,tcp:80,10.244.0.2']);
  assert.deepEqual(set('KUBE-EXTERNAL-IP'), ['192.168.0.10,tcp:80', '203.0.113.5,tcp:80']);
  assert.deepEqual(set('KUBE-LOAD-BALANCER'), ['198.51.100.7,tcp:80']);
});

test('ClientIP affinity makes the virtual server persistent with its timeout', () => {
  const s = svc('sticky', {
    clusterIP: '10.96.0.11',
    ports: [PORT],
    sessionAffinity: 'ClientIP',
    sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
  });
  const { plan } = planIpvsFromObjects([s], [], opts, 'IPv4');
  const vs = plan.virtualServers[0]?.virtualServer;
  assert.ok(vs);
  assert.deepEqual(vs.flags, ['persistent']);
  assert.equal(vs.timeoutSeconds, 600);
});

test('terminating endpoints serve only when no endpoint is ready (KEP-1669)', () => {
  const s = svc('t', { clusterIP: '10.96.0.12', ports: [PORT] });
  const both = slice('t', [
    { addresses: ['10.244.0.5'], conditions: { ready: true } },
    { addresses: ['10.244.0.6'], conditions: { ready: false, serving: true, terminating: true } },
  ]);
  const rs = (sl: EndpointSlice) =>
    planIpvsFromObjects([s], [sl], opts, 'IPv4').plan.virtualServers[0]?.realServers.map(
      (r) => r.address,
    );
  assert.deepEqual(rs(both), ['10.244.0.5']);
  const onlyTerminating = slice('t', [
    { addresses: ['10.244.0.6'], conditions: { ready: false, serving: true, terminating: true } },
  ]);
  assert.deepEqual(rs(onlyTerminating), ['10.244.0.6']);
});

test('iptables rules: jumps and set matches in kube-proxy order; restore text', () => {
  const s = svc('web', { clusterIP: '10.96.0.10', ports: [PORT] });
  const { plan } = planIpvsFromObjects([s], [], opts, 'IPv4');
  const services = plan.iptables
    .filter((r) => r.table === 'nat' && r.chain === 'KUBE-SERVICES')
    .map((r) => `${ruleJump(r)}|${ruleMatchSet(r)}`);
  assert.deepEqual(services, [
    'RETURN|',
    'KUBE-MARK-MASQ|KUBE-CLUSTER-IP',
    'KUBE-NODE-PORT|',
    'ACCEPT|KUBE-CLUSTER-IP',
  ]);
  const text = renderIpvsIptables(plan.iptables);
  assert.match(text, /^\*nat\n:KUBE-SERVICES - \[0:0\]\n/);
  assert.match(text, /-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip/);
  assert.match(text, /COMMIT\n\*filter\n/);
});

test('IPv6 set names are KUBE-6-… cut to 31 characters', () => {
  assert.equal(ipsetName('KUBE-CLUSTER-IP', 'IPv6', true), 'KUBE-6-CLUSTER-IP');
  assert.equal(
    ipsetName('KUBE-LOAD-BALANCER-SOURCE-CIDR', 'IPv6', true),
    'KUBE-6-LOAD-BALANCER-SOURCE-CID',
  );
  assert.equal(ipsetName('KUBE-CLUSTER-IP', 'IPv6', false), 'KUBE-CLUSTER-IP');
  assert.equal(ipsetName('KUBE-CLUSTER-IP', 'IPv4', true), 'KUBE-CLUSTER-IP');
});
