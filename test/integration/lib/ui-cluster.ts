// Objects for the browser test of `svcnet ui`, written straight into a plain `svcnet apiserver`
// (no controllers, no lab): the walkthrough's nginx Deployment as it looks once running — three
// ready Pods behind Service nginx-svc:3000 and their EndpointSlice — plus a client Pod, two
// Nodes, and a generator of a large cluster (N Services, M Pods) for the page-load figure.

import { request } from 'node:https';
import type { ApiServerChild } from './apiserver-child.js';

export interface Api {
  call(method: string, path: string, body?: unknown): Promise<unknown>;
}

/** A JSON client of the child API server (its CA, its token). */
export function apiOf(server: ApiServerChild, ca: string): Api {
  return {
    call(method, path, body) {
      return new Promise((resolve, reject) => {
        const url = new URL(path, server.url);
        const data = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          url,
          {
            method,
            ca,
            headers: {
              authorization: `Bearer ${server.token}`,
              accept: 'application/json',
              ...(data !== undefined ? { 'content-type': 'application/json' } : {}),
            },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => {
              if ((res.statusCode ?? 500) >= 300)
                reject(new Error(`${method} ${path}: ${res.statusCode}: ${text}`));
              else resolve(text === '' ? undefined : JSON.parse(text));
            });
          },
        );
        req.on('error', reject);
        req.end(data);
      });
    },
  };
}

export const NODES = [
  { name: 'svcnet-control-plane', ip: '172.18.0.2', cidr: '10.244.0.0/24' },
  { name: 'svcnet-worker', ip: '172.18.0.3', cidr: '10.244.1.0/24' },
];

export const NGINX = [
  { name: 'nginx-deployment-7c79c4bf97-4xk2p', ip: '10.244.1.11', node: 'svcnet-worker' },
  { name: 'nginx-deployment-7c79c4bf97-9fdzn', ip: '10.244.0.12', node: 'svcnet-control-plane' },
  { name: 'nginx-deployment-7c79c4bf97-qw8lt', ip: '10.244.1.13', node: 'svcnet-worker' },
];

export const CLIENT = { name: 'client', ip: '10.244.1.5', node: 'svcnet-worker' };

function nodeObject(n: (typeof NODES)[number]) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name } },
    spec: { podCIDR: n.cidr, podCIDRs: [n.cidr] },
    status: {
      addresses: [
        { type: 'InternalIP', address: n.ip },
        { type: 'Hostname', address: n.name },
      ],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

async function createPod(
  api: Api,
  ns: string,
  p: { name: string; ip: string; node: string },
  labels: Record<string, string>,
): Promise<void> {
  await api.call('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: ns, labels },
    spec: {
      nodeName: p.node,
      containers: [{ name: 'c', image: 'registry.k8s.io/e2e-test-images/agnhost:2.53' }],
    },
  });
  const pod = (await api.call('GET', `/api/v1/namespaces/${ns}/pods/${p.name}`)) as Record<
    string,
    unknown
  >;
  await api.call('PUT', `/api/v1/namespaces/${ns}/pods/${p.name}/status`, {
    ...pod,
    status: {
      phase: 'Running',
      podIP: p.ip,
      podIPs: [{ ip: p.ip }],
      hostIP: NODES.find((n) => n.name === p.node)?.ip,
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  });
}

export function sliceObject(
  ns: string,
  svc: string,
  port: { name: string; port: number },
  pods: readonly { name: string; ip: string; node: string }[],
) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${svc}-abcde`,
      namespace: ns,
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    },
    addressType: 'IPv4',
    ports: [{ name: port.name, protocol: 'TCP', port: port.port }],
    endpoints: pods.map((p) => ({
      addresses: [p.ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: p.node,
      targetRef: { kind: 'Pod', namespace: ns, name: p.name },
    })),
  };
}

/** The nginx walkthrough cluster; returns the Service and slice objects as stored. */
export async function createNginxCluster(api: Api): Promise<{ service: unknown; slice: unknown }> {
  for (const n of NODES) await api.call('POST', '/api/v1/nodes', nodeObject(n));
  for (const p of NGINX) await createPod(api, 'default', p, { app: 'nginx' });
  await createPod(api, 'default', CLIENT, { app: 'client' });
  const service = await api.call('POST', '/api/v1/namespaces/default/services', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'nginx-svc', namespace: 'default' },
    spec: {
      type: 'NodePort',
      selector: { app: 'nginx' },
      ports: [{ name: 'http', protocol: 'TCP', port: 3000, targetPort: 80 }],
    },
  });
  const slice = await api.call(
    'POST',
    '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
    sliceObject('default', 'nginx-svc', { name: 'http', port: 80 }, NGINX),
  );
  return { service, slice };
}

/** `services` Services in namespace `ns`, each with pods/services Pods behind it. */
export async function createLargeCluster(
  api: Api,
  ns: string,
  services: number,
  pods: number,
): Promise<void> {
  await api.call('POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: ns },
  });
  const per = Math.ceil(pods / services);
  const jobs: Promise<unknown>[] = [];
  const flush = async (): Promise<void> => {
    await Promise.all(jobs.splice(0));
  };
  let podIndex = 0;
  for (let s = 0; s < services; s++) {
    const name = `svc-${s}`;
    const members: { name: string; ip: string; node: string }[] = [];
    for (let i = 0; i < per && podIndex < pods; i++, podIndex++) {
      const node = NODES[podIndex % NODES.length]!;
      const ip = `10.244.${100 + Math.floor(podIndex / 250)}.${(podIndex % 250) + 2}`;
      members.push({ name: `${name}-pod-${i}`, ip, node: node.name });
    }
    jobs.push(
      (async () => {
        for (const m of members) await createPod(api, ns, m, { app: name });
        await api.call('POST', `/api/v1/namespaces/${ns}/services`, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: ns },
          spec: {
            selector: { app: name },
            ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
          },
        });
        await api.call(
          'POST',
          `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
          sliceObject(ns, name, { name: 'http', port: 8080 }, members),
        );
      })(),
    );
    if (jobs.length >= 16) await flush();
  }
  await flush();
}
