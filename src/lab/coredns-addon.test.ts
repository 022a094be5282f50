import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConfigMap, Deployment, KubeObject, PodSpec, Service } from '../kube/types.js';
import { corefileToDnsConfig } from '../dns/corefile-config.js';
import {
  COREDNS_MANIFEST,
  corednsObjects,
  DNS_GRACE_SECONDS,
  labCorefile,
} from './coredns-addon.js';
import { manifestDocs, readDeployManifest } from './deploy-manifest.js';
import { planLab } from './topology.js';

const manifest = readDeployManifest(COREDNS_MANIFEST);

function parts(objs: KubeObject[]): {
  corefile: string;
  deploy: Deployment;
  svc: Service;
  kinds: string[];
} {
  const of = (kind: string): KubeObject | undefined => objs.find((o) => o.kind === kind);
  return {
    corefile: (of('ConfigMap') as ConfigMap).data?.Corefile ?? '',
    deploy: of('Deployment') as Deployment,
    svc: of('Service') as Service,
    kinds: objs.map((o) => o.kind ?? ''),
  };
}

function podSpec(deploy: Deployment): PodSpec {
  const spec = deploy.spec?.template?.spec;
  assert.ok(spec, 'the Deployment has a Pod template');
  return spec;
}

test('the lab applies deploy/coredns.yaml whole: kubeadm Corefile, svcnet dns --corefile from the volume, kube-dns at the plan address', () => {
  const { corefile, deploy, svc, kinds } = parts(corednsObjects(manifest, planLab({ nodes: 2 })));
  assert.deepEqual(kinds, [
    'ServiceAccount',
    'ClusterRole',
    'ClusterRoleBinding',
    'ConfigMap',
    'Deployment',
    'Service',
  ]);
  // The Corefile is the manifest's, byte for byte, in a cluster.local lab.
  const raw = manifestDocs(manifest).find((d) => d.kind === 'ConfigMap') as ConfigMap;
  assert.equal(corefile, raw.data?.Corefile);
  const { config, reloadMs, forward } = corefileToDnsConfig(corefile, 'Corefile');
  assert.deepEqual(config.resolver.zones, ['cluster.local.', 'in-addr.arpa.', 'ip6.arpa.']);
  assert.equal(config.resolver.ttl, 30);
  assert.equal(config.resolver.pods, 'insecure');
  assert.equal(forward, true);
  assert.equal(config.resolvConf, '/etc/resolv.conf');
  assert.equal(reloadMs, 30_000, 'reload: ConfigMap edits reach the Pods');
  assert.equal(svc.spec?.clusterIP, '10.96.0.10');
  assert.deepEqual(svc.spec.selector, { 'k8s-app': 'kube-dns' });
  const pod = podSpec(deploy);
  const c = pod.containers[0];
  assert.ok(c);
  assert.deepEqual(c.command, ['svcnet', 'dns', '--corefile', '/etc/coredns/Corefile']);
  // Two replicas already: one process each.
  assert.deepEqual(c.args, ['--workers', '1']);
  assert.equal(c.volumeMounts?.[0]?.mountPath, '/etc/coredns');
  assert.equal(pod.volumes?.[0]?.configMap?.name, 'coredns');
  assert.equal(c.readinessProbe?.periodSeconds, 1);
  assert.equal(c.readinessProbe.httpGet?.port, 8181);
  // Its own lookups go to the node's resolver, not to itself.
  assert.equal(pod.dnsPolicy, 'Default');
  assert.equal(deploy.spec?.replicas, 2);
});

test("a deleted DNS Pod has time for the Corefile's lameduck before the agent would SIGKILL it", () => {
  const { corefile, deploy } = parts(corednsObjects(manifest, planLab({ nodes: 2 })));
  const lameduckMs = corefileToDnsConfig(corefile, 'Corefile').config.lameduckMs;
  assert.equal(lameduckMs, 5000, "kubeadm's lameduck 5s");
  const grace = podSpec(deploy).terminationGracePeriodSeconds ?? 0;
  assert.equal(grace, DNS_GRACE_SECONDS);
  assert.ok(grace * 1000 >= lameduckMs + 10_000, `grace ${String(grace)} s leaves room`);
});

test('another cluster domain replaces cluster.local in the zones and the cache exceptions only', () => {
  const objs = corednsObjects(manifest, planLab({ nodes: 1, ipFamily: 'dual' }), {
    domain: 'lab.example',
    workers: 2,
  });
  const { corefile, deploy, svc } = parts(objs);
  assert.doesNotMatch(corefile, /cluster\.local/);
  assert.match(corefile, /^\s+kubernetes lab\.example in-addr\.arpa ip6\.arpa \{$/m);
  assert.match(corefile, /^\s+disable success lab\.example$/m);
  const { config } = corefileToDnsConfig(corefile, 'Corefile');
  assert.deepEqual(config.resolver.zones, ['lab.example.', 'in-addr.arpa.', 'ip6.arpa.']);
  // A dual-stack lab's kube-dns keeps one address, as before.
  assert.equal(svc.spec?.clusterIP, '10.96.0.10');
  assert.equal(svc.spec.clusterIPs, undefined);
  assert.deepEqual(podSpec(deploy).containers[0]?.args, ['--workers', '2']);
  assert.equal(
    labCorefile('kubernetes cluster.localx cluster.local', 'a.b'),
    'kubernetes cluster.localx a.b',
  );
});

test('a manifest without the Corefile or the clusterIP is an error naming the object and field', () => {
  const noCorefile = manifest.replace('Corefile: |', 'Other: |');
  assert.throws(() => corednsObjects(noCorefile, planLab({ nodes: 1 })), {
    message: 'coredns.yaml: ConfigMap coredns: data.Corefile missing',
  });
  const noIP = manifest.replace(/^ {2}clusterIP: .*\n/m, '');
  assert.throws(() => corednsObjects(noIP, planLab({ nodes: 1 })), {
    message: 'coredns.yaml: Service kube-dns: spec.clusterIP missing',
  });
});
