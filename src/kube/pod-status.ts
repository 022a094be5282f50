// The status a kubelet reports for a running Pod, shared by the controllers' fake kubelet
// (reconcile-kubelet.ts) and the lab's node agent (lab/agent.ts): phase Running; the
// conditions PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled;
// pod and host IPs; one running container status per container. Pure.

import type { Container, Pod, PodCondition } from './types.js';

export type PodStatus = NonNullable<Pod['status']>;

export interface RunningPodStatusInput {
  readonly containers: readonly Container[];
  /** status.podIP is the first; status.podIPs all of them. */
  readonly podIPs: readonly string[];
  readonly hostIP?: string;
  /** status.hostIPs, when the caller reports them. */
  readonly hostIPs?: readonly string[];
  /** When the containers started (status.startTime and each container's startedAt). */
  readonly startTime: string;
  /** Now, as the caller writes timestamps: the lastTransitionTime of a changed condition. */
  readonly now: string;
  /** Ready and ContainersReady, and each container's ready. */
  readonly ready: boolean;
  /** Conditions reported before: one that keeps its status keeps its lastTransitionTime. */
  readonly previous?: readonly PodCondition[];
  /** The image reported for a container without one (left out when absent). */
  readonly defaultImage?: string;
}

/** Condition types in the order the kubelet reports them. */
const CONDITIONS = [
  'PodReadyToStartContainers',
  'Initialized',
  'Ready',
  'ContainersReady',
  'PodScheduled',
] as const;

/** The status of a running Pod; only `ready` decides Ready and ContainersReady. */
export function runningPodStatus(i: RunningPodStatusInput): PodStatus {
  const cond = (type: string): PodCondition => {
    const status = i.ready || (type !== 'Ready' && type !== 'ContainersReady') ? 'True' : 'False';
    const prev = (i.previous ?? []).find((c) => c.type === type);
    return {
      type,
      status,
      lastTransitionTime:
        prev?.status === status && prev.lastTransitionTime !== undefined
          ? prev.lastTransitionTime
          : i.now,
    };
  };
  return {
    phase: 'Running',
    conditions: CONDITIONS.map(cond),
    podIP: i.podIPs[0] ?? '',
    podIPs: i.podIPs.map((ip) => ({ ip })),
    ...(i.hostIP !== undefined ? { hostIP: i.hostIP } : {}),
    ...(i.hostIPs !== undefined ? { hostIPs: i.hostIPs.map((ip) => ({ ip })) } : {}),
    startTime: i.startTime,
    containerStatuses: i.containers.map((c) => {
      const image = c.image ?? i.defaultImage;
      return {
        name: c.name,
        ready: i.ready,
        restartCount: 0,
        ...(image !== undefined ? { image } : {}),
        imageID: '',
        started: true,
        state: { running: { startedAt: i.startTime } },
      };
    }),
  };
}
