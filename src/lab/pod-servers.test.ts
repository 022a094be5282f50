import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expandVars, hostedContainer, isShellCommand, planPodServer } from './pod-servers.js';
import { containerEnv } from './pod-exec.js';
import { containerMounts } from './configmap-volume.js';
import type { Pod } from '../kube/types.js';

function pod(containers: NonNullable<Pod['spec']>['containers']): Pod {
  return { metadata: { name: 'p', namespace: 'default' }, spec: { containers } };
}

test('declared container ports become HTTP and UDP servers, in one process', () => {
  const plan = planPodServer(
    pod([
      { name: 'a', ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] },
      {
        name: 'b',
        ports: [
          { containerPort: 8080, protocol: 'TCP' },
          { containerPort: 5353, protocol: 'UDP' },
        ],
      },
    ]),
  );
  assert.deepEqual(plan.args, [
    'netexec',
    '--http-port',
    '80',
    '--udp-port',
    '53',
    '--extra-port',
    '8080/tcp',
    '--extra-port',
    '5353/udp',
  ]);
});

test('an agnhost netexec container keeps its own ports and delay', () => {
  const plan = planPodServer(
    pod([
      {
        name: 'c',
        image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
        args: ['netexec', '--http-port=8083', '--udp-port', '-1', '--delay-shutdown=30'],
      },
    ]),
  );
  assert.deepEqual(plan.tcpPorts, [8083]);
  assert.deepEqual(plan.udpPorts, []);
  assert.equal(plan.delayShutdownSeconds, 30);
  assert.deepEqual(plan.args, [
    'netexec',
    '--http-port',
    '8083',
    '--udp-port',
    '-1',
    '--delay-shutdown',
    '30',
  ]);
});

test('a Pod without ports serves HTTP on 80, like the walkthrough nginx', () => {
  assert.deepEqual(planPodServer(pod([{ name: 'nginx', image: 'nginx' }])).args, [
    'netexec',
    '--http-port',
    '80',
    '--udp-port',
    '-1',
  ]);
});

test('a svcnet container runs its own subcommand, with the lab kubeconfig added', () => {
  const dns = pod([
    {
      name: 'dns',
      command: ['svcnet', 'dns'],
      args: ['--listen', '0.0.0.0:53'],
      ports: [
        { containerPort: 53, protocol: 'UDP' },
        { containerPort: 53, protocol: 'TCP' },
        { containerPort: 9153 },
      ],
    },
  ]);
  const plan = planPodServer(dns, { kubeconfig: '/lab/cluster.kubeconfig' });
  assert.deepEqual(plan.args, [
    'dns',
    '--listen',
    '0.0.0.0:53',
    '--kubeconfig',
    '/lab/cluster.kubeconfig',
  ]);
  assert.deepEqual(plan.tcpPorts, [53, 9153]);
  assert.deepEqual(plan.udpPorts, [53]);
  const own = pod([{ name: 'x', command: ['svcnet', 'dns', '--kubeconfig', '/k'] }]);
  assert.deepEqual(planPodServer(own, { kubeconfig: '/lab' }).args, ['dns', '--kubeconfig', '/k']);
  const netexec = pod([{ name: 'n', command: ['svcnet', 'netexec', '--http-port', '81'] }]);
  assert.deepEqual(planPodServer(netexec, { kubeconfig: '/lab' }).args, [
    'netexec',
    '--http-port',
    '81',
  ]);
});

test('a shell container runs its own command and args, as they are, serving nothing more', () => {
  const plan = planPodServer(
    pod([{ name: 'crash', image: 'busybox', command: ['/bin/sh', '-c'], args: ['exit 1'] }]),
  );
  assert.deepEqual(plan.command, ['/bin/sh', '-c', 'exit 1']);
  assert.deepEqual(plan.tcpPorts, []);
  assert.equal(isShellCommand(['bash', '-c', 'true']), true);
  assert.equal(isShellCommand(['sleep', '3600']), false);
  assert.equal(isShellCommand(undefined), false);
  // Anything else still runs netexec (an image's own entrypoint does not exist in the lab).
  assert.equal(planPodServer(pod([{ name: 'c', command: ['sleep', '3600'] }])).command, undefined);
});

test('the kube-proxy container: $(NODE_NAME) from its env, --config read from its configMap volume', () => {
  const p: Pod = {
    metadata: { name: 'kube-proxy-abc', namespace: 'kube-system', uid: 'u9' },
    spec: {
      nodeName: 'svcnet-worker',
      hostNetwork: true,
      containers: [
        {
          name: 'kube-proxy',
          command: [
            'svcnet',
            'proxy',
            '--config',
            '/var/lib/kube-proxy/config.conf',
            '--hostname-override=$(NODE_NAME)',
            '--x=$(UNSET)',
            '$$(NODE_NAME)',
          ],
          env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
          volumeMounts: [{ name: 'kube-proxy', mountPath: '/var/lib/kube-proxy' }],
        },
      ],
      volumes: [{ name: 'kube-proxy', configMap: { name: 'kube-proxy' } }],
    },
  };
  const plan = planPodServer(p, {
    kubeconfig: '/lab/kc',
    envOf: (c) => containerEnv(p, c, 'svcnet-worker'),
    mountsOf: (c) => containerMounts('/lab/volumes', p, c),
  });
  assert.deepEqual(plan.args, [
    'proxy',
    '--config',
    '/lab/volumes/u9/volumes/kubernetes.io~configmap/kube-proxy/config.conf',
    '--hostname-override=svcnet-worker',
    '--x=$(UNSET)',
    '$(NODE_NAME)',
    '--kubeconfig',
    '/lab/kc',
  ]);
  assert.equal(expandVars('a$(B)c$$', { B: 'b' }), 'abc$');
});

test('a netexec plan becomes a pod host container; other plans do not', () => {
  const fifos = { stdout: '/l/0.log.stdout', stderr: '/l/0.log.stderr' };
  const plan = planPodServer(
    pod([
      {
        name: 'c',
        image: 'agnhost',
        args: ['netexec', '--http-port=8080', '--udp-port=8081'],
        ports: [{ containerPort: 9000, protocol: 'UDP' }],
      },
    ]),
  );
  assert.deepEqual(hostedContainer(plan, 'pod-1', 'pod-1', 'web-0', fifos), {
    id: 'pod-1',
    netns: '/run/netns/pod-1',
    resolvConf: '/etc/netns/pod-1/resolv.conf',
    hosts: '/etc/netns/pod-1/hosts',
    hostname: 'web-0',
    httpPort: 8080,
    udpPort: 8081,
    extraPorts: [{ port: 9000, protocol: 'udp' }],
    delayShutdownSeconds: 0,
    ...fifos,
  });
  const shell = planPodServer(
    pod([{ name: 'c', image: 'busybox', command: ['sh', '-c', 'exit 1'] }]),
  );
  assert.equal(hostedContainer(shell, 'pod-1', 'pod-1', 'x', fifos), undefined);
});
