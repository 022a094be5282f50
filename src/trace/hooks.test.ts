// Tests of the jumps the view assumes for a document without any (a restore file, `svcnet
// render` output): the order and text of a live kind node's built-in chains, and none where
// the document already jumps into kube-proxy's chains.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDocument } from '../netfilter/iptables/parse.js';
import { renderRule } from '../netfilter/iptables/render.js';
import { buildView } from './hooks.js';

const FILTER = [
  '*filter',
  ':KUBE-EXTERNAL-SERVICES - [0:0]',
  ':KUBE-FIREWALL - [0:0]',
  ':KUBE-FORWARD - [0:0]',
  ':KUBE-NODEPORTS - [0:0]',
  ':KUBE-PROXY-FIREWALL - [0:0]',
  ':KUBE-SERVICES - [0:0]',
  'COMMIT',
  '*nat',
  ':KUBE-POSTROUTING - [0:0]',
  ':KUBE-SERVICES - [0:0]',
  'COMMIT',
  '',
].join('\n');

function chain(view: ReturnType<typeof buildView>, table: 'filter' | 'nat', name: string) {
  return (view.tables.get(table)?.chains.get(name)?.rules ?? []).map(renderRule);
}

test('a document without hooks gets the jumps of a live node, in its order', () => {
  const view = buildView(parseDocument(FILTER), true);
  assert.deepEqual(chain(view, 'filter', 'INPUT'), [
    '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
    '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
    '-A INPUT -j KUBE-FIREWALL',
  ]);
  assert.deepEqual(chain(view, 'filter', 'FORWARD'), [
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
  ]);
  assert.deepEqual(chain(view, 'filter', 'OUTPUT'), [
    '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -j KUBE-FIREWALL',
  ]);
  assert.deepEqual(chain(view, 'nat', 'POSTROUTING'), [
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
  ]);
  assert.ok(view.assumedChains.includes('nat/PREROUTING'));
  assert.equal(view.assumed.size, 14);
});

test('a chain that already jumps into kube-proxy chains is left as it is', () => {
  const doc = parseDocument(
    FILTER.replace('COMMIT\n*nat', '-A INPUT -j KUBE-FIREWALL\nCOMMIT\n*nat'),
  );
  const view = buildView(doc, true);
  assert.deepEqual(chain(view, 'filter', 'INPUT'), ['-A INPUT -j KUBE-FIREWALL']);
  assert.ok(!view.assumedChains.includes('filter/INPUT'));
});
