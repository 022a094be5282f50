// The names of the controllers `svcnet controller --controllers` switches on and off, and the
// informers they read (one per kind). Kept apart from the manager so the CLI can parse and
// document the flag and wire the informers without loading the manager and, through it, the
// Kubernetes client library (seconds of start-up).

import type { ApiKind, ApiKindMap } from '../kube/api-client.js';
import type { Informer } from '../kube/informer.js';

/** Controllers that can be switched on and off (`--controllers`). */
export const CONTROLLER_KINDS = [
  'endpointslice',
  'endpoints',
  'mirroring',
  'deployment',
  'replicaset',
  'statefulset',
  'daemonset',
  'scheduler',
] as const;
export type ControllerKind = (typeof CONTROLLER_KINDS)[number];

/** The kind each informer the controllers read caches, by its ControllerInformers field. */
export const INFORMER_KINDS = {
  services: 'Service',
  pods: 'Pod',
  nodes: 'Node',
  endpointSlices: 'EndpointSlice',
  endpoints: 'Endpoints',
  deployments: 'Deployment',
  replicaSets: 'ReplicaSet',
  statefulSets: 'StatefulSet',
  daemonSets: 'DaemonSet',
  controllerRevisions: 'ControllerRevision',
} as const satisfies Record<string, ApiKind>;

export type InformerField = keyof typeof INFORMER_KINDS;

/** One informer per kind the controllers read (over HTTP, or following a Store). */
export type ControllerInformers = {
  readonly [F in InformerField]: Informer<ApiKindMap[(typeof INFORMER_KINDS)[F]]>;
};

/** The ControllerInformers field of each kind (every ApiKind has one). */
export const INFORMER_FIELD = Object.fromEntries(
  Object.entries(INFORMER_KINDS).map(([field, kind]) => [kind, field]),
) as Readonly<Record<ApiKind, InformerField>>;

/** Builds the informer bundle with `make`, one call per kind. */
export function controllerInformers(
  make: <K extends ApiKind>(kind: K) => Informer<ApiKindMap[K]>,
): ControllerInformers {
  return Object.fromEntries(
    Object.entries(INFORMER_KINDS).map(([field, kind]) => [field, make(kind)]),
  ) as unknown as ControllerInformers;
}
