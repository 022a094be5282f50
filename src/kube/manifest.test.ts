import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findExcessiveNesting, parseManifests } from './manifest.js';
import { ValidationError } from '../errors.js';

function load(text: string, path = 'm.yaml') {
  return parseManifests([{ path, text }]);
}

function errorsOf(text: string): string[] {
  try {
    load(text);
  } catch (e) {
    assert.ok(e instanceof ValidationError);
    return e.message.split('\n');
  }
  assert.fail('expected a ValidationError');
}

const svc = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{port: 80}]
`;

test('multi-document YAML is grouped by kind and namespaced objects default to "default"', () => {
  const set = load(`${svc}---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
`);
  assert.equal(set.services.length, 1);
  assert.equal(set.services[0]?.metadata?.namespace, 'default');
  assert.equal(set.endpointSlices.length, 1);
  assert.equal(set.others[0]?.kind, 'Deployment');
});

test('JSON and List kinds are expanded', () => {
  const list = {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'a', namespace: 'x' },
        spec: { ports: [{ port: 53, protocol: 'UDP' }] },
      },
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n1' },
        spec: { podCIDR: '10.244.1.0/24' },
      },
    ],
  };
  const set = load(JSON.stringify(list), 'l.json');
  assert.equal(set.services[0]?.metadata?.namespace, 'x');
  assert.equal(set.nodes[0]?.metadata?.name, 'n1');
});

test('every bad field is reported with object and field named', () => {
  const lines = errorsOf(`apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: 10.0.0.300
  ports:
  - {name: a, port: 0}
  - {name: b, port: 80, protocol: ICMP}
`);
  assert.deepEqual(lines, [
    'm.yaml: Service default/web: spec.ports[0].port: must be 1-65535, got 0',
    'm.yaml: Service default/web: spec.ports[1].protocol: must be TCP, UDP or SCTP, got "ICMP"',
    'm.yaml: Service default/web: spec.clusterIP: must be a valid IP address, got "10.0.0.300"',
  ]);
});

test('unknown kinds and invalid YAML are errors naming the document', () => {
  assert.match(
    errorsOf('apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n')[0] ?? '',
    /^m\.yaml: Gadget g: kind: unknown kind "Gadget"$/,
  );
  const yamlErrors = errorsOf('kind: Service\n  bad: [\n');
  assert.equal(yamlErrors.length, 1, 'one error per bad document, not its echoes');
  assert.match(
    yamlErrors[0] ?? '',
    /^m\.yaml:1:7: invalid YAML: Nested mappings are not allowed in compact mappings: "kind: Service"$/,
  );
  assert.doesNotMatch(yamlErrors[0] ?? '', /at line/, 'the position is given once');
});

test('an alias bomb and deep nesting are refused as invalid YAML, naming the file', () => {
  const bomb = [
    'a: &a [x, x, x, x, x, x, x, x, x]',
    ...'bcdefghi'.split('').map((c, i) => {
      const prev = 'abcdefghi'[i] ?? '';
      return `${c}: &${c} [${Array(9).fill(`*${prev}`).join(', ')}]`;
    }),
  ].join('\n');
  assert.match(errorsOf(bomb)[0] ?? '', /^m\.yaml: invalid YAML: too many alias expansions/);
  assert.deepEqual(errorsOf(`${'['.repeat(5000)}${']'.repeat(5000)}`), [
    'm.yaml:1: nested more than 100 levels deep',
  ]);
  const blocks = Array.from({ length: 150 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n');
  assert.deepEqual(errorsOf(blocks), ['m.yaml:101: nested more than 100 levels deep']);
});

test('findExcessiveNesting ignores brackets in quotes and comments', () => {
  const text = `a: "${'['.repeat(200)}"\nb: '${'{'.repeat(200)}'\n# ${'['.repeat(200)}\nc: [[1]]\n`;
  assert.equal(findExcessiveNesting(text), 0);
  assert.equal(findExcessiveNesting('x: [[[1]]]\n', 3), 1);
});

test('EndpointSlice addresses must match addressType', () => {
  const lines = errorsOf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: s, namespace: ns}
addressType: IPv4
endpoints: [{addresses: ["fd00::1"]}, {addresses: []}]
`);
  assert.deepEqual(lines, [
    'm.yaml: EndpointSlice ns/s: endpoints[0].addresses[0]: must be an IPv4 address (addressType), got "fd00::1"',
    'm.yaml: EndpointSlice ns/s: endpoints[1].addresses: must hold at least one address',
  ]);
});
