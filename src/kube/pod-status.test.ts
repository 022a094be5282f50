import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runningPodStatus } from './pod-status.js';

const base = {
  containers: [{ name: 'web', image: 'nginx' }, { name: 'sidecar' }],
  podIPs: ['10.244.1.5', 'fd00::5'],
  startTime: '2026-01-01T00:00:00Z',
  now: '2026-01-01T00:01:00Z',
};

test('a ready running pod: five True conditions, IPs, one running status per container', () => {
  const s = runningPodStatus({
    ...base,
    hostIP: '172.18.0.2',
    hostIPs: ['172.18.0.2'],
    ready: true,
  });
  assert.equal(s.phase, 'Running');
  assert.deepEqual(
    s.conditions?.map((c) => `${c.type}=${c.status}`),
    [
      'PodReadyToStartContainers=True',
      'Initialized=True',
      'Ready=True',
      'ContainersReady=True',
      'PodScheduled=True',
    ],
  );
  assert.equal(s.podIP, '10.244.1.5');
  assert.deepEqual(s.podIPs, [{ ip: '10.244.1.5' }, { ip: 'fd00::5' }]);
  assert.deepEqual(s.hostIPs, [{ ip: '172.18.0.2' }]);
  assert.deepEqual(s.containerStatuses?.[1], {
    name: 'sidecar',
    ready: true,
    restartCount: 0,
    imageID: '',
    started: true,
    state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
  });
});

test('not ready: Ready and ContainersReady False; an unchanged condition keeps its time', () => {
  const s = runningPodStatus({
    ...base,
    ready: false,
    defaultImage: 'svcnet/netexec',
    previous: [
      { type: 'Initialized', status: 'True', lastTransitionTime: '2025-12-31T00:00:00Z' },
      { type: 'Ready', status: 'True', lastTransitionTime: '2025-12-31T00:00:00Z' },
    ],
  });
  const byType = new Map(s.conditions?.map((c) => [c.type, c]));
  assert.equal(byType.get('Ready')?.status, 'False');
  assert.equal(byType.get('ContainersReady')?.status, 'False');
  assert.equal(byType.get('Initialized')?.lastTransitionTime, '2025-12-31T00:00:00Z');
  assert.equal(byType.get('Ready')?.lastTransitionTime, '2026-01-01T00:01:00Z');
  assert.equal(s.containerStatuses?.[1]?.image, 'svcnet/netexec');
  assert.equal(s.hostIP, undefined);
});
