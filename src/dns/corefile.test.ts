import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SvcnetError } from '../errors.js';
import { parseCorefile, tokenizeCorefile } from './corefile.js';
import { corefileToDnsConfig } from './corefile-config.js';
import type { DnsConfig } from './config.js';

const testdata = (name: string): string =>
  readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

/** kubeadm's and kind's Corefile, as DnsConfig. */
const SHIPPED: DnsConfig = {
  resolver: {
    zones: ['cluster.local.', 'in-addr.arpa.', 'ip6.arpa.'],
    ttl: 30,
    pods: 'insecure',
    namespaces: [],
    endpointPodNames: false,
    ignoreEmptyService: false,
    fallthrough: ['in-addr.arpa.', 'ip6.arpa.'],
    zonal: false,
    multiclusterZones: [],
    localIPs: [],
  },
  listen: { host: '0.0.0.0', port: 53 },
  health: { host: '0.0.0.0', port: 8080 },
  ready: { host: '0.0.0.0', port: 8181 },
  metrics: { host: '0.0.0.0', port: 9153 },
  upstreams: [],
  resolvConf: '/etc/resolv.conf',
  cache: { enabled: true, maxTtl: 30, capacity: 9984 },
  transfer: false,
  startupTimeoutSeconds: 5,
  forwardTimeoutMs: 2000,
  forwardMaxConcurrent: 1000,
  labelSelector: undefined,
  noEndpoints: false,
  lameduckMs: 5000,
};

function rejects(text: string, message: string): void {
  assert.throws(
    () => corefileToDnsConfig(text, 'Corefile'),
    (e: unknown) => e instanceof SvcnetError && e.code === 'INVALID_INPUT' && e.message === message,
  );
}

for (const name of ['Corefile.kubeadm', 'Corefile.kind'])
  test(`${name} maps onto the config kubeadm's defaults give`, () => {
    const s = corefileToDnsConfig(testdata(name), name);
    assert.deepEqual(s.config, SHIPPED);
    assert.equal(s.forward, true);
    assert.equal(s.reloadMs, 30_000);
    assert.equal(s.kubeconfig, undefined);
    assert.deepEqual(
      s.notImplemented.map((n) => n.what),
      ['plugin loop', 'plugin loadbalance'],
    );
  });

test('tokens: comments, quotes spanning lines, {$ENV} with defaults, line numbers', () => {
  const toks = tokenizeCorefile('a "b c" # no\n"d\ne" {$X} {$Y:dflt}#x\n', 'f', { X: 'ex' });
  assert.deepEqual(
    toks.map((t) => [t.text, t.line, t.endLine]),
    [
      ['a', 1, 1],
      ['b c', 1, 1],
      ['d\ne', 2, 3],
      ['ex', 3, 3],
      ['dflt#x', 3, 3],
    ],
  );
});

test('blocks: one-liners, nested blocks, several keys, lines of every directive', () => {
  const [b, ...rest] = parseCorefile(
    '# head\n.:1053, dns://.:53 {\n  health { lameduck 1s }\n  x a {\n    y {\n      z 1\n    }\n  }\n  ready\n}\n',
    'f',
  );
  assert.equal(rest.length, 0);
  assert.deepEqual(b?.keys, ['.:1053', 'dns://.:53']);
  assert.deepEqual(b.directives, [
    {
      name: 'health',
      args: [],
      line: 3,
      block: [{ name: 'lameduck', args: ['1s'], line: 3, block: undefined }],
    },
    {
      name: 'x',
      args: ['a'],
      line: 4,
      block: [
        {
          name: 'y',
          args: [],
          line: 5,
          block: [{ name: 'z', args: ['1'], line: 6, block: undefined }],
        },
      ],
    },
    { name: 'ready', args: [], line: 9, block: undefined },
  ]);
  assert.throws(
    () => parseCorefile('.:53 {\n errors\n', 'f'),
    /^SvcnetError: Corefile f:1: block opened here is not closed/,
  );
  assert.throws(
    () => parseCorefile('.:53 {\n "x\n}', 'f'),
    /Corefile f:2: unterminated quoted string/,
  );
});

test('a misspelt plugin is rejected naming it and its line', () => {
  const text = testdata('Corefile.kubeadm').replace(
    'kubernetes cluster.local',
    'kubernets cluster.local',
  );
  rejects(
    text,
    'Corefile Corefile:7: unknown plugin "kubernets"; Corefile Corefile:1: no kubernetes plugin: svcnet dns serves the cluster zones from it',
  );
});

test('a misspelt kubernetes option is rejected naming it and its line', () => {
  rejects(
    testdata('Corefile.kind').replace('ttl 30', 'tll 30'),
    'Corefile Corefile:10: unknown option "tll" of plugin kubernetes',
  );
  rejects(
    testdata('Corefile.kind')
      .replace('pods insecure', 'pods secure')
      .replace('max_concurrent 1000', 'max_concurrent lots'),
    'Corefile Corefile:8: kubernetes pods: must be disabled, insecure or verified; Corefile Corefile:14: forward max_concurrent: must be an integer 1-1000000, got "lots"',
  );
});

test("CoreDNS's kubernetes options map onto the resolver and daemon settings", () => {
  const s = corefileToDnsConfig(
    `.:1053 {
  bind 127.0.0.1
  kubernetes example.org {
    pods verified
    endpoint_pod_names
    ignore empty_service
    noendpoints
    namespaces default kube-system
    labels app=web,tier!=cache
    kubeconfig /etc/kc admin
    fallthrough
  }
  forward . 10.0.0.1 [fd00::1]:5353 dns://10.0.0.2:53 { policy sequential }
  health :18080
  reload 2s
}
`,
    'c',
  );
  assert.deepEqual(s.config.listen, { host: '127.0.0.1', port: 1053 });
  assert.deepEqual(
    { ...s.config.resolver },
    {
      ...SHIPPED.resolver,
      zones: ['example.org.'],
      ttl: 5,
      pods: 'verified',
      endpointPodNames: true,
      ignoreEmptyService: true,
      namespaces: ['default', 'kube-system'],
      fallthrough: [],
    },
  );
  assert.equal(s.config.noEndpoints, true);
  assert.equal(s.config.labelSelector, 'app=web,tier!=cache');
  assert.deepEqual(s.kubeconfig, { file: '/etc/kc', context: 'admin' });
  assert.deepEqual(s.config.upstreams, [
    { host: '10.0.0.1', port: 53 },
    { host: 'fd00::1', port: 5353 },
    { host: '10.0.0.2', port: 53 },
  ]);
  assert.deepEqual(
    [
      s.config.health,
      s.config.ready,
      s.config.metrics,
      s.config.cache.enabled,
      s.config.lameduckMs,
    ],
    [{ host: '0.0.0.0', port: 18080 }, undefined, undefined, false, 0],
  );
  assert.equal(s.reloadMs, 2000);
  assert.deepEqual(s.notImplemented, [{ line: 13, what: 'forward option policy' }]);
});

test('what svcnet cannot serve is refused, not ignored', () => {
  rejects(
    'example.org:53 {\n kubernetes cluster.local\n}\n.:54 {\n kubernetes cluster.local\n}\n',
    'Corefile Corefile:4: only one server block is supported (svcnet dns serves one root zone); Corefile Corefile:1: server block key "example.org:53": only the root zone "." is supported, as ".:PORT"',
  );
  rejects(
    '.:53 {\n kubernetes cluster.local {\n  endpoint https://1.2.3.4\n }\n forward example.org 1.1.1.1\n}\n',
    'Corefile Corefile:3: unknown option "endpoint" of plugin kubernetes; Corefile Corefile:5: forward: only "forward . TO..." (every name) is supported',
  );
});
