// The kinds deploy/ needs beyond the workloads: DaemonSet defaults (RollingUpdate,
// maxUnavailable 1, maxSurge 0), its reset status and update-strategy check; RBAC names as
// path segments (`system:kube-proxy`), a binding's roleRef required, of a supported kind and
// immutable; ServiceAccounts; their schemas (an unknown field is reported) and Table columns.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CLUSTERROLEBINDINGS,
  CLUSTERROLES,
  DAEMONSETS,
  ROLEBINDINGS,
  SERVICEACCOUNTS,
} from './resources.js';
import { checkBodySchema } from './schema.js';
import { ApiError } from './status.js';
import { toTable } from './table.js';
import { newTestApi } from './testing.js';

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  assert.fail('expected an ApiError');
}

const ds = (updateStrategy?: object) => ({
  metadata: { name: 'kube-proxy' },
  spec: {
    selector: { matchLabels: { app: 'p' } },
    template: {
      metadata: { labels: { app: 'p' } },
      spec: { containers: [{ name: 'c', image: 'svcnet' }] },
    },
    ...(updateStrategy !== undefined ? { updateStrategy } : {}),
  },
});

const binding = (kind: string, name = 'view') => ({
  metadata: { name: 'system:b' },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name },
  subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'kube-system' }],
});

describe('DaemonSets', () => {
  it('are defaulted as kube-apiserver does, with a zero status', () => {
    const { store } = newTestApi();
    const o = store.create(DAEMONSETS, 'kube-system', ds());
    const spec = o.spec as { updateStrategy: object; revisionHistoryLimit: number };
    assert.deepEqual(spec.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    assert.equal(spec.revisionHistoryLimit, 10);
    assert.deepEqual(o.status, {
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
    });
    const row = toTable(DAEMONSETS, [o], Date.parse('2026-01-01T00:00:05Z')).rows[0];
    assert.deepEqual(row?.cells.slice(0, 8), ['kube-proxy', 0, 0, 0, 0, 0, '<none>', '5s']);
  });

  it('accept OnDelete and refuse an unknown update strategy, naming the field', () => {
    const { store } = newTestApi();
    store.create(DAEMONSETS, 'default', ds({ type: 'OnDelete' }));
    const e = apiError(() => store.create(DAEMONSETS, 'kube-system', ds({ type: 'Sometimes' })));
    assert.equal(e.status, 422);
    assert.match(e.message, /spec\.updateStrategy\.type: Unsupported value: "Sometimes"/);
  });

  it('have a schema: an unknown spec field is reported', () => {
    const body = { ...ds(), spec: { ...ds().spec, replicas: 3 } };
    assert.deepEqual(checkBodySchema(DAEMONSETS, body), ['spec.replicas']);
  });
});

describe('RBAC kinds and ServiceAccounts', () => {
  it('take path-segment names with colons, refuse a slash', () => {
    const { store } = newTestApi();
    const role = store.create(CLUSTERROLES, undefined, {
      metadata: { name: 'system:kube-proxy' },
      rules: [{ apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] }],
    });
    assert.equal(role.metadata.name, 'system:kube-proxy');
    const e = apiError(() => store.create(CLUSTERROLES, undefined, { metadata: { name: 'a/b' } }));
    assert.equal(e.status, 422);
    assert.match(e.message, /metadata\.name/);
  });

  it('require a roleRef of a supported kind, and keep it immutable', () => {
    const { store } = newTestApi();
    const e = apiError(() => store.create(CLUSTERROLEBINDINGS, undefined, binding('Role')));
    assert.match(e.message, /roleRef\.kind: Unsupported value: "Role"/);
    store.create(ROLEBINDINGS, 'kube-system', binding('Role'));
    const b = store.create(CLUSTERROLEBINDINGS, undefined, binding('ClusterRole'));
    const changed = apiError(() =>
      store.update(CLUSTERROLEBINDINGS, undefined, 'system:b', {
        ...b,
        roleRef: { ...binding('ClusterRole').roleRef, name: 'admin' },
      }),
    );
    assert.match(changed.message, /roleRef: Invalid value/);
    const row = toTable(CLUSTERROLEBINDINGS, [b], Date.parse('2026-01-01T00:00:00Z')).rows[0];
    assert.deepEqual(row?.cells, ['system:b', 'ClusterRole/view', '0s', '', '', 'kube-system/sa']);
  });

  it('check rule and subject fields and serve ServiceAccounts', () => {
    assert.deepEqual(
      checkBodySchema(CLUSTERROLES, { metadata: { name: 'r' }, rules: [{ verb: ['get'] }] }),
      ['rules[0].verb'],
    );
    const { store } = newTestApi();
    const sa = store.create(SERVICEACCOUNTS, 'kube-system', {
      metadata: { name: 'kube-proxy' },
      automountServiceAccountToken: true,
    });
    assert.equal(sa.kind, 'ServiceAccount');
  });
});
