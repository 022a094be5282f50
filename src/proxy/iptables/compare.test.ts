import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDocument } from '../../netfilter/iptables/parse.js';
import { checkRuleJumps, sortIptablesText } from './compare.js';
import { hash16 } from '../name-hash.js';
import { endpointChainName, servicePortChains } from './names.js';
import { computeProbability } from './probability.js';

test('sortIptablesText: canonical chain order, dispatch rules by service, last rule last', () => {
  const text = `*nat
:KUBE-SVC-B - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:OTHER - [0:0]
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS
-A KUBE-SERVICES -m comment --comment "ns/b:p cluster IP" -j KUBE-SVC-B
-A KUBE-SERVICES -m comment --comment "ns/a:p cluster IP" -j KUBE-SVC-B
-A KUBE-SVC-B -j RETURN
-A KUBE-SVC-B -j ACCEPT
-X KUBE-SVC-Z
COMMIT
*filter
:KUBE-FORWARD - [0:0]
COMMIT
`;
  assert.equal(
    sortIptablesText(text),
    `*filter
:KUBE-FORWARD - [0:0]
COMMIT
*nat
:KUBE-NODEPORTS - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-B - [0:0]
:OTHER - [0:0]
-A KUBE-SERVICES -m comment --comment "ns/a:p cluster IP" -j KUBE-SVC-B
-A KUBE-SERVICES -m comment --comment "ns/b:p cluster IP" -j KUBE-SVC-B
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS
-A KUBE-SVC-B -j RETURN
-A KUBE-SVC-B -j ACCEPT
-X KUBE-SVC-Z
COMMIT
`,
  );
});

test('checkRuleJumps: undeclared targets, unreferenced service chains, rules in deleted chains', () => {
  const doc = parseDocument(`*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-ORPHAN - [0:0]
:KUBE-SEP-GONE - [0:0]
-A KUBE-SERVICES -j KUBE-SVC-A
-A KUBE-SVC-A -j KUBE-SEP-MISSING
-A KUBE-SEP-GONE -j DNAT --to-destination 1.2.3.4:5
-X KUBE-SEP-GONE
COMMIT
`);
  assert.deepEqual(checkRuleJumps(doc), [
    'nat: KUBE-SVC-A jumps to undeclared chain KUBE-SEP-MISSING',
    'nat: rule appended to deleted chain KUBE-SEP-GONE',
    'nat: chain KUBE-SEP-ORPHAN is declared but never jumped to',
  ]);
});

test('chain names: base32(sha256)[:16] of our own inputs (checked against Python hashlib)', () => {
  assert.equal(hash16('default/nginx-svctcp'), 'HL5LMXD5JFHQZ6LN');
  assert.equal(servicePortChains('default/nginx-svc', 'TCP').svc, 'KUBE-SVC-HL5LMXD5JFHQZ6LN');
  assert.equal(
    servicePortChains('kube-system/kube-dns:dns', 'UDP').ext,
    'KUBE-EXT-TCOU7JCQXEZGVUNU',
  );
  assert.equal(servicePortChains('web/api:http', 'SCTP').fw, 'KUBE-FW-GQM2SA4N5E524PQD');
  assert.equal(
    endpointChainName('default/nginx-svc', 'TCP', '10.244.1.7:80'),
    'KUBE-SEP-KQV5JZPAAUPURZEY',
  );
  assert.equal(
    endpointChainName('web/api', 'tcp', '[fd00:10::5]:8080'),
    'KUBE-SEP-DJJPYKRWEWUPVIOE',
  );
});

test('computeProbability prints like Go %0.10f, ties to even', () => {
  const cases: [number, string][] = [
    [1, '1.0000000000'],
    [3, '0.3333333333'],
    [7, '0.1428571429'],
    [2048, '0.0004882812'],
    [4096, '0.0002441406'],
    [300000, '0.0000033333'],
  ];
  for (const [n, want] of cases) assert.equal(computeProbability(n), want, `n=${n}`);
});
