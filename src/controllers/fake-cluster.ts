// An in-memory cluster for tests, dry runs and demos: the API server's own Store (with its
// strategies, bootstrapped like a fresh server) behind a StoreKubeClient, plus one informer
// per kind the controllers watch, kept in step through Store.watch (the way real informers
// follow an API server, but synchronously).

import { StoreKubeClient } from '../apiserver/store-kube-client.js';
import { newTestApi, type TestApi } from '../apiserver/testing.js';
import type { ControllerInformers } from './manager.js';

export interface FakeCluster {
  readonly api: TestApi;
  readonly client: StoreKubeClient;
  readonly informers: ControllerInformers;
}

/** A cluster on `api` (a fresh test API by default) and informers that follow it. */
export function createFakeCluster(api: TestApi = newTestApi()): FakeCluster {
  const client = new StoreKubeClient(api.store, { now: api.now });
  const informers: ControllerInformers = {
    services: client.informer('Service'),
    pods: client.informer('Pod'),
    nodes: client.informer('Node'),
    endpointSlices: client.informer('EndpointSlice'),
    endpoints: client.informer('Endpoints'),
    deployments: client.informer('Deployment'),
    replicaSets: client.informer('ReplicaSet'),
    statefulSets: client.informer('StatefulSet'),
  };
  return { api, client, informers };
}
