// An in-memory cluster for tests, dry runs and demos: the API server's own Store (with its
// strategies, bootstrapped like a fresh server) behind a StoreKubeClient, plus one informer
// per kind the controllers watch, kept in step through Store.watch (the way real informers
// follow an API server, but synchronously).

import { StoreKubeClient } from '../apiserver/store-kube-client.js';
import { newTestApi, type TestApi } from '../apiserver/testing.js';
import { controllerInformers, type ControllerInformers } from './kinds.js';

export interface FakeCluster {
  readonly api: TestApi;
  readonly client: StoreKubeClient;
  readonly informers: ControllerInformers;
}

/** A cluster on `api` (a fresh test API by default) and informers that follow it. */
export function createFakeCluster(api: TestApi = newTestApi()): FakeCluster {
  const client = new StoreKubeClient(api.store, { now: api.now });
  const informers = controllerInformers((kind) => client.informer(kind));

  return { api, client, informers };
}
