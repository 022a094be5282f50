// The IPVS mode's iptables rules: the whole restore text of a plan that writes every kind of
// rule, pinned in kube-proxy's order (testdata/kitchen-sink.iptables; UPDATE_GOLDEN=1
// rewrites it), and each typed rule as iptables-restore would read it back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endpoint, service, slice } from '../../kube/testing.js';
import type { EndpointSlice, Service } from '../../kube/types.js';
import { parseRule, renderRuleArgs, validateRule } from '../../netfilter/iptables/rule.js';
import { DEFAULT_IPVS_OPTIONS } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import { planIpvsFromObjects } from './plan-objects.js';
import { renderIpvsIptables, ruleJump, ruleMatchSet } from './rules.js';

/** The Service's one endpoint, ready on this node, serving port 80 of `protocol`. */
function sliceOf(name: string, ip: string, protocol: 'TCP' | 'UDP' | 'SCTP'): EndpointSlice {
  return slice(`ns/${name}`, [endpoint(ip, { conditions: { ready: true }, nodeName: 'node-a' })], {
    ports: [{ name: 'p', port: 80, protocol }],
  });
}

const lbStatus = (ip: string): Partial<Service> => ({
  status: { loadBalancer: { ingress: [{ ip }] } },
});

/** Pod traffic told by the cluster CIDR, MASQUERADE --random-fully; the node outside the LB's ranges. */
const opts: IpvsProxierOptions = {
  ...DEFAULT_IPVS_OPTIONS,
  localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' },
  hasRandomFully: true,
  nodeName: 'node-a',
  nodeIP: '192.168.0.10',
  nodePortIPs: ['192.168.0.10'],
};

/** One Service of each kind whose sets the rules match: every rule kind is written. */
function kitchenSink(): { services: Service[]; slices: EndpointSlice[] } {
  const port = (protocol: 'TCP' | 'UDP' | 'SCTP', nodePort?: number) => ({
    name: 'p',
    port: 80,
    protocol,
    ...(nodePort !== undefined ? { nodePort } : {}),
  });
  const services = [
    service(
      'ns/fw',
      {
        type: 'LoadBalancer',
        clusterIP: '10.96.0.10',
        ports: [port('TCP', 30080)],
        loadBalancerSourceRanges: ['203.0.113.0/24'],
      },
      lbStatus('198.51.100.7'),
    ),
    service(
      'ns/local',
      {
        type: 'LoadBalancer',
        clusterIP: '10.96.0.11',
        externalIPs: ['203.0.113.5'],
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32000,
        ports: [port('UDP', 30053)],
      },
      lbStatus('198.51.100.8'),
    ),
    service('ns/ext', {
      clusterIP: '10.96.0.12',
      externalIPs: ['203.0.113.6'],
      ports: [port('TCP')],
    }),
    service('ns/sctp', { type: 'NodePort', clusterIP: '10.96.0.13', ports: [port('SCTP', 30132)] }),
  ];
  const slices = [
    sliceOf('fw', '10.244.0.2', 'TCP'),
    sliceOf('local', '10.244.0.3', 'UDP'),
    sliceOf('ext', '10.244.0.4', 'TCP'),
    sliceOf('sctp', '10.244.0.5', 'SCTP'),
  ];
  return { services, slices };
}

test('the restore text of a plan writing every rule kind, in kube-proxy order', () => {
  const { services, slices } = kitchenSink();
  const { plan } = planIpvsFromObjects(services, slices, opts, 'IPv4');
  const text = renderIpvsIptables(plan.iptables);
  const file = join(import.meta.dirname, 'testdata', 'kitchen-sink.iptables');
  if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, text);
  assert.equal(text, readFileSync(file, 'utf8'));
  // The parts a reader looks at: the IPVS-OUT-FILTER drop names no set, the hairpin MASQUERADE does.
  const out = plan.iptables.filter((r) => r.chain === 'KUBE-IPVS-OUT-FILTER');
  assert.deepEqual(out.map(ruleJump), ['DROP']);
  assert.deepEqual(out.map(ruleMatchSet), ['']);
  const postrouting = plan.iptables.filter((r) => r.chain === 'KUBE-POSTROUTING');
  assert.deepEqual(postrouting.map(ruleMatchSet), ['KUBE-LOOP-BACK', '', '', '']);
});

test('every rule is valid and parses back from its words to the same typed rule', () => {
  const { services, slices } = kitchenSink();
  for (const family of ['IPv4', 'IPv6'] as const)
    for (const o of [opts, { ...opts, masqueradeAll: true, hasRandomFully: false }]) {
      const { plan } = planIpvsFromObjects(services, slices, o, family);
      for (const r of plan.iptables) {
        const words = renderRuleArgs(r.rule);
        assert.deepEqual(validateRule(r.rule), [], words.join(' '));
        assert.deepEqual(parseRule(words), r.rule, words.join(' '));
      }
    }
});
