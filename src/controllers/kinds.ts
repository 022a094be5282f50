// The names of the controllers `svcnet controller --controllers` switches on and off. Kept
// apart from the manager so the CLI can parse and document the flag without loading the
// manager and, through it, the Kubernetes client library (seconds of start-up).

/** Controllers that can be switched on and off (`--controllers`). */
export const CONTROLLER_KINDS = [
  'endpointslice',
  'endpoints',
  'mirroring',
  'deployment',
  'replicaset',
  'statefulset',
  'scheduler',
] as const;
export type ControllerKind = (typeof CONTROLLER_KINDS)[number];
