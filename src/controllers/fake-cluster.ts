// An in-memory cluster for tests, dry runs and demos: a FakeKubeClient plus one FakeInformer
// per kind the controllers watch, kept in step with the client's writes through its watch
// (the way real informers follow an API server, but synchronously).

import type { ApiKind } from '../kube/api-client.js';
import { FakeKubeClient } from '../kube/api-client.js';
import { FakeInformer } from '../kube/informer.js';
import type { KubeObject } from '../kube/types.js';
import { objectKey } from '../kube/types.js';
import type { ControllerInformers } from './manager.js';

export interface FakeCluster {
  readonly client: FakeKubeClient;
  readonly informers: ControllerInformers;
}

const FIELD: Readonly<Record<ApiKind, keyof ControllerInformers>> = {
  Service: 'services',
  Pod: 'pods',
  Node: 'nodes',
  EndpointSlice: 'endpointSlices',
  Endpoints: 'endpoints',
  Deployment: 'deployments',
  ReplicaSet: 'replicaSets',
  StatefulSet: 'statefulSets',
};

/** A FakeKubeClient (optionally with a clock) and informers that follow it. */
export function createFakeCluster(client = new FakeKubeClient()): FakeCluster {
  const informers = {
    services: new FakeInformer(client.all('Service')),
    pods: new FakeInformer(client.all('Pod')),
    nodes: new FakeInformer(client.all('Node')),
    endpointSlices: new FakeInformer(client.all('EndpointSlice')),
    endpoints: new FakeInformer(client.all('Endpoints')),
    deployments: new FakeInformer(client.all('Deployment')),
    replicaSets: new FakeInformer(client.all('ReplicaSet')),
    statefulSets: new FakeInformer(client.all('StatefulSet')),
  };
  client.watch((ev) => {
    const inf = informers[FIELD[ev.kind]] as FakeInformer<KubeObject>;
    if (ev.type === 'DELETED') inf.delete(objectKey(ev.object));
    else inf.upsert(ev.object);
  });
  return { client, informers };
}
