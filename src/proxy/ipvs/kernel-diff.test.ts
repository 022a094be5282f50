// ipsetDiffOps: a partial sync's del/add lines against what it applied last (strict: the
// kernel refuses a wrong base), a full sync's against what the kernel listed (every set
// created -exist, lines with -exist, never a flush).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderRestore } from '../../netfilter/ipset/render.js';
import { ipsetDiffOps } from './kernel-diff.js';
import type { IpsetPlan } from './plan.js';

const SET: IpsetPlan = {
  name: 'KUBE-CLUSTER-IP',
  base: 'KUBE-CLUSTER-IP',
  comment: '',
  type: 'hash:ip,port',
  family: 'inet',
  options: { hashsize: 1024, maxelem: 65536 },
  entries: [{ value: '10.96.0.1,tcp:443' }, { value: '10.96.0.10,udp:53' }],
};

test('partial: only the entries that changed, deletes first', () => {
  const have = new Map([['KUBE-CLUSTER-IP', new Set(['10.96.0.1,tcp:443', '10.96.0.9,tcp:80'])]]);
  assert.equal(
    renderRestore(ipsetDiffOps([SET], have)),
    'del KUBE-CLUSTER-IP 10.96.0.9,tcp:80\nadd KUBE-CLUSTER-IP 10.96.0.10,udp:53\n',
  );
  assert.deepEqual(
    ipsetDiffOps([SET], new Map([[SET.name, new Set(['10.96.0.1,tcp:443', '10.96.0.10,udp:53'])]])),
    [],
  );
});

test('full: created -exist, del/add with -exist; a missing set is created and filled', () => {
  const have = new Map([['KUBE-CLUSTER-IP', new Set(['10.96.0.1,tcp:443', '10.96.0.9,tcp:80'])]]);
  assert.equal(
    renderRestore(ipsetDiffOps([SET], have, true)),
    [
      'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 -exist',
      'del KUBE-CLUSTER-IP 10.96.0.9,tcp:80 -exist',
      'add KUBE-CLUSTER-IP 10.96.0.10,udp:53 -exist',
      '',
    ].join('\n'),
  );
  assert.equal(
    renderRestore(ipsetDiffOps([SET], new Map())),
    [
      'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 -exist',
      'add KUBE-CLUSTER-IP 10.96.0.1,tcp:443',
      'add KUBE-CLUSTER-IP 10.96.0.10,udp:53',
      '',
    ].join('\n'),
  );
});
