import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeIpvsState } from '../../netfilter/ipvs/model.js';
import type { IpvsService, RealServer, VirtualServer } from '../../netfilter/ipvs/model.js';
import { applyIpvsOperations, reconcileIpvs } from './reconcile.js';

const VS: VirtualServer = {
  protocol: 'tcp',
  address: '10.96.0.10',
  port: 80,
  scheduler: 'rr',
  flags: [],
};
const rs = (address: string, weight = 1): RealServer => ({
  address,
  port: 80,
  weight,
  forward: 'Masq',
});
const svc = (reals: RealServer[], vs: VirtualServer = VS): IpvsService => ({
  virtualServer: vs,
  realServers: reals,
});
const base = { family: 'IPv4' as const, excludeCIDRs: [], initialSync: false };

test('adds missing services and real servers; nothing to do when equal', () => {
  const want = [svc([rs('10.244.0.1'), rs('10.244.0.2')])];
  const ops = reconcileIpvs(new Map(), want, { ...base, connections: () => 0 });
  assert.deepEqual(
    ops.map((o) => o.verb),
    ['addService', 'addReal', 'addReal'],
  );
  const state = applyIpvsOperations(new Map(), ops);
  assert.deepEqual(reconcileIpvs(state, want, { ...base, connections: () => 0 }), []);
});

test('graceful termination: a TCP real server with connections goes to weight 0, then comes back', () => {
  const current = makeIpvsState([svc([rs('10.244.0.1'), rs('10.244.0.2')])]);
  const want = [svc([rs('10.244.0.1')])];
  const draining = reconcileIpvs(current, want, { ...base, connections: () => 3 });
  assert.deepEqual(draining, [{ verb: 'editReal', id: VS, realServer: rs('10.244.0.2', 0) }]);
  const gone = reconcileIpvs(current, want, { ...base, connections: () => 0 });
  assert.deepEqual(
    gone.map((o) => o.verb),
    ['deleteReal'],
  );
  // Back while at weight 0: delete and re-add at weight 1; on a restart, edit the weight.
  const zero = applyIpvsOperations(current, draining);
  const back = [svc([rs('10.244.0.1'), rs('10.244.0.2')])];
  assert.deepEqual(
    reconcileIpvs(zero, back, { ...base, connections: () => 0 }).map((o) => o.verb),
    ['deleteReal', 'addReal'],
  );
  assert.deepEqual(
    reconcileIpvs(zero, back, { ...base, initialSync: true, connections: () => 0 }).map(
      (o) => o.verb,
    ),
    ['editReal'],
  );
});

test('stale services go unless excluded or of the other family; changed ones are edited', () => {
  const other: VirtualServer = { ...VS, address: '3.3.3.3' };
  const v6: VirtualServer = { ...VS, address: 'fd00::1' };
  const current = makeIpvsState([svc([]), svc([], other), svc([], v6)]);
  const ops = reconcileIpvs(current, [svc([], { ...VS, scheduler: 'wrr' })], {
    ...base,
    excludeCIDRs: ['3.3.3.0/24'],
    connections: () => 0,
  });
  assert.deepEqual(
    ops.map((o) => o.verb),
    ['editService'],
  );
  const all = reconcileIpvs(current, [], { ...base, connections: () => 0 });
  assert.deepEqual(
    all.map((o) => o.verb),
    ['deleteService', 'deleteService'],
  );
});
