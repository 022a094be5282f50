// Well-known label and annotation keys, and label values, that svcnet reads or writes.
// Spelled verbatim as Kubernetes does; never inline these strings elsewhere.

/** EndpointSlice → Service ownership label. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
/** Which controller manages an EndpointSlice. */
export const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
export const MANAGED_BY_CONTROLLER = 'endpointslice-controller.k8s.io';
export const MANAGED_BY_MIRRORING = 'endpointslicemirroring-controller.k8s.io';
/** Services carrying this label are served only by the named proxy (kube-proxy skips them). */
export const LABEL_SERVICE_PROXY_NAME = 'service.kubernetes.io/service-proxy-name';
/** Services carrying this label are headless to kube-proxy (no rules). */
export const LABEL_HEADLESS = 'service.kubernetes.io/headless';
export const LABEL_TOPOLOGY_ZONE = 'topology.kubernetes.io/zone';
export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
export const LABEL_POD_TEMPLATE_HASH = 'pod-template-hash';
export const ANNOTATION_TOPOLOGY_MODE = 'service.kubernetes.io/topology-mode';
/** Deprecated spelling of the topology-mode annotation, still honoured by kube-proxy. */
export const ANNOTATION_TOPOLOGY_AWARE_HINTS = 'service.kubernetes.io/topology-aware-hints';
export const ANNOTATION_LAST_CHANGE_TRIGGER_TIME =
  'endpoints.kubernetes.io/last-change-trigger-time';
export const ANNOTATION_ENDPOINTS_OVER_CAPACITY = 'endpoints.kubernetes.io/over-capacity';

export const TRAFFIC_DISTRIBUTION_PREFER_CLOSE = 'PreferClose';
export const TRAFFIC_DISTRIBUTION_PREFER_SAME_ZONE = 'PreferSameZone';
export const TRAFFIC_DISTRIBUTION_PREFER_SAME_NODE = 'PreferSameNode';
