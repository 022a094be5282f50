// Label, annotation and finalizer keys that only the controllers write, spelled as
// Kubernetes does. Keys shared with other subsystems live in src/kube/names.ts.

/** Set on Endpoints the Endpoints controller manages so the mirroring controller skips them. */
export const LABEL_SKIP_MIRROR = 'endpointslice.kubernetes.io/skip-mirror';
export const LABEL_STATEFULSET_POD_NAME = 'statefulset.kubernetes.io/pod-name';
export const LABEL_POD_INDEX = 'apps.kubernetes.io/pod-index';
export const LABEL_CONTROLLER_REVISION_HASH = 'controller-revision-hash';
export const ANNOTATION_DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';
export const ANNOTATION_DESIRED_REPLICAS = 'deployment.kubernetes.io/desired-replicas';
export const ANNOTATION_MAX_REPLICAS = 'deployment.kubernetes.io/max-replicas';
/** Endpoints objects hold at most this many addresses (upstream maxCapacity). */
export const MAX_ENDPOINTS_ADDRESSES = 1000;
