// The Kubernetes API objects svcnet reads, as plain JSON-shaped types (fields as the API
// spells them; everything optional that the API leaves optional). These are wire shapes:
// nothing here is defaulted or validated — see manifest.ts and validate.ts for that.

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: unknown[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface TypeMeta {
  apiVersion?: string;
  kind?: string;
}

/** Any object with type and object metadata; the common denominator of manifests. */
export interface KubeObject extends TypeMeta {
  metadata?: ObjectMeta;
}

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type IPFamilyName = 'IPv4' | 'IPv6';
export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
export type TrafficPolicy = 'Cluster' | 'Local';
export type IPFamilyPolicy = 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';

export interface ServicePort {
  name?: string;
  protocol?: Protocol;
  appProtocol?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
}

export interface SessionAffinityConfig {
  clientIP?: { timeoutSeconds?: number };
}

export interface ServiceSpec {
  type?: ServiceType;
  selector?: Record<string, string>;
  ports?: ServicePort[];
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: IPFamilyName[];
  ipFamilyPolicy?: IPFamilyPolicy;
  externalIPs?: string[];
  externalName?: string;
  externalTrafficPolicy?: TrafficPolicy;
  internalTrafficPolicy?: TrafficPolicy;
  healthCheckNodePort?: number;
  loadBalancerIP?: string;
  loadBalancerSourceRanges?: string[];
  loadBalancerClass?: string;
  allocateLoadBalancerNodePorts?: boolean;
  sessionAffinity?: 'None' | 'ClientIP';
  sessionAffinityConfig?: SessionAffinityConfig;
  publishNotReadyAddresses?: boolean;
  trafficDistribution?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: 'VIP' | 'Proxy';
  ports?: { port: number; protocol: Protocol; error?: string }[];
}

export interface ServiceStatus {
  loadBalancer?: { ingress?: LoadBalancerIngress[] };
  conditions?: unknown[];
}

export interface Service extends KubeObject {
  kind?: 'Service';
  spec?: ServiceSpec;
  status?: ServiceStatus;
}

export interface EndpointConditions {
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export interface EndpointHints {
  forZones?: { name: string }[];
  forNodes?: { name: string }[];
}

export interface Endpoint {
  addresses: string[];
  conditions?: EndpointConditions;
  hostname?: string;
  targetRef?: ObjectReference;
  nodeName?: string;
  zone?: string;
  hints?: EndpointHints;
}

export interface EndpointPort {
  name?: string;
  protocol?: Protocol;
  port?: number;
  appProtocol?: string;
}

export type AddressType = 'IPv4' | 'IPv6' | 'FQDN';

export interface EndpointSlice extends KubeObject {
  kind?: 'EndpointSlice';
  addressType: AddressType;
  endpoints?: Endpoint[];
  ports?: EndpointPort[];
}

export interface ObjectReference {
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
}

export interface NodeAddress {
  type: 'InternalIP' | 'ExternalIP' | 'Hostname' | 'InternalDNS' | 'ExternalDNS';
  address: string;
}

export interface Node extends KubeObject {
  kind?: 'Node';
  spec?: { podCIDR?: string; podCIDRs?: string[]; unschedulable?: boolean; taints?: Taint[] };
  status?: {
    addresses?: NodeAddress[];
    conditions?: {
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastHeartbeatTime?: string;
      lastTransitionTime?: string;
    }[];
    nodeInfo?: Record<string, string>;
  };
}

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: Protocol;
  hostPort?: number;
}

export interface Probe {
  httpGet?: { path?: string; port: number | string; scheme?: string };
  tcpSocket?: { port: number | string };
  exec?: { command?: string[] };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  /** Liveness and startup: the grace period of the kill after a failure (else the Pod's). */
  terminationGracePeriodSeconds?: number;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: ContainerPort[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  env?: EnvVar[];
  volumeMounts?: VolumeMount[];
}

export interface EnvVar {
  name: string;
  value?: string;
  /** The lab resolves fieldRef (metadata.*, spec.nodeName, status.*IP); others read as ''. */
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
}

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface Volume {
  name: string;
  configMap?: { name: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  hostPath?: { path: string; type?: string };
  emptyDir?: Record<string, unknown>;
}

export interface ConfigMap extends KubeObject {
  kind?: 'ConfigMap';
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

export interface PodSpec {
  containers: Container[];
  /** Run in order, each to completion, before the containers start. */
  initContainers?: Container[];
  nodeName?: string;
  hostname?: string;
  subdomain?: string;
  hostNetwork?: boolean;
  dnsPolicy?: string;
  /** Pod-level DNS settings merged into (dnsPolicy None: making up) the Pod's resolv.conf. */
  dnsConfig?: PodDNSConfig;
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
  schedulerName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  volumes?: Volume[];
  serviceAccountName?: string;
}

export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: { name: string; value?: string }[];
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image?: string;
  imageID?: string;
  started?: boolean;
  state?: ContainerState;
  lastState?: ContainerState;
  containerID?: string;
}

export interface ContainerStateTerminated {
  exitCode: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

export interface ContainerState {
  running?: { startedAt?: string };
  waiting?: { reason?: string; message?: string };
  terminated?: ContainerStateTerminated;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  lastTransitionTime?: string;
}

export interface Pod extends KubeObject {
  kind?: 'Pod';
  spec?: PodSpec;
  status?: {
    phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    podIP?: string;
    podIPs?: { ip: string }[];
    hostIP?: string;
    hostIPs?: { ip: string }[];
    conditions?: PodCondition[];
    startTime?: string;
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef?: ObjectReference;
}

export interface Endpoints extends KubeObject {
  kind?: 'Endpoints';
  subsets?: {
    addresses?: EndpointAddress[];
    notReadyAddresses?: EndpointAddress[];
    ports?: { name?: string; port: number; protocol?: Protocol; appProtocol?: string }[];
  }[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec?: PodSpec;
}

export interface WorkloadCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface DeploymentSpec {
  replicas?: number;
  selector?: LabelSelector;
  template?: PodTemplateSpec;
  strategy?: {
    type?: 'RollingUpdate' | 'Recreate';
    rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string };
  };
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  progressDeadlineSeconds?: number;
  paused?: boolean;
}

export interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  collisionCount?: number;
  conditions?: WorkloadCondition[];
}

export interface Deployment extends KubeObject {
  kind?: 'Deployment';
  spec?: DeploymentSpec;
  status?: DeploymentStatus;
}

export interface ReplicaSetStatus {
  observedGeneration?: number;
  replicas?: number;
  fullyLabeledReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  conditions?: WorkloadCondition[];
}

export interface ReplicaSet extends KubeObject {
  kind?: 'ReplicaSet';
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: PodTemplateSpec;
    minReadySeconds?: number;
  };
  status?: ReplicaSetStatus;
}

/** A condition of a ServiceCIDR (`Ready`), as metav1.Condition. */
export interface ServiceCIDRCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/**
 * networking.k8s.io/v1 ServiceCIDR (GA in Kubernetes 1.33): a range ClusterIPs are allocated
 * from; kube-apiserver creates `kubernetes` from --service-cluster-ip-range. Cluster-scoped.
 */
export interface ServiceCIDR extends KubeObject {
  kind?: 'ServiceCIDR';
  spec?: { cidrs?: string[] };
  status?: { conditions?: ServiceCIDRCondition[] };
}

export interface StatefulSetStatus {
  observedGeneration?: number;
  replicas?: number;
  readyReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  availableReplicas?: number;
  currentRevision?: string;
  updateRevision?: string;
  collisionCount?: number;
}

export interface StatefulSet extends KubeObject {
  kind?: 'StatefulSet';
  spec?: {
    replicas?: number;
    selector?: LabelSelector;
    template?: PodTemplateSpec;
    serviceName?: string;
    podManagementPolicy?: 'OrderedReady' | 'Parallel';
    ordinals?: { start?: number };
    updateStrategy?: { type?: string; rollingUpdate?: { partition?: number } };
    minReadySeconds?: number;
  };
  status?: StatefulSetStatus;
}

export interface DaemonSetStatus {
  observedGeneration?: number;
  desiredNumberScheduled?: number;
  currentNumberScheduled?: number;
  numberMisscheduled?: number;
  numberReady?: number;
  numberAvailable?: number;
  numberUnavailable?: number;
  updatedNumberScheduled?: number;
  collisionCount?: number;
  conditions?: WorkloadCondition[];
}

export interface DaemonSet extends KubeObject {
  kind?: 'DaemonSet';
  spec?: {
    selector?: LabelSelector;
    template?: PodTemplateSpec;
    updateStrategy?: {
      type?: 'RollingUpdate' | 'OnDelete';
      rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string };
    };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
  };
  status?: DaemonSetStatus;
}

/**
 * apps/v1 ControllerRevision: one revision of a DaemonSet's (or StatefulSet's) template, as
 * the patch that restores it (`kubectl rollout history` and `rollout undo` read them).
 */
export interface ControllerRevision extends KubeObject {
  kind?: 'ControllerRevision';
  data?: unknown;
  revision: number;
}

/** `namespace/name` key of a namespaced object (or just `name` when cluster-scoped). */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns === undefined || ns === '' ? name : `${ns}/${name}`;
}

/** How errors name an object: `Service default/web`. */
export function describeObject(obj: KubeObject): string {
  const key = objectKey(obj);
  return `${obj.kind ?? 'object'} ${key === '' ? '(unnamed)' : key}`;
}
