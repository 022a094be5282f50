// The shape of every served kind, as a table: the type of each known field (metadata for
// every kind, the top level of each kind, the specs we serve in full) so that a write whose
// field has the wrong type is refused with 422 naming the field (`metadata.name: 5`), and
// the unknown fields kube-apiserver's `fieldValidation` acts on (Strict: 400 listing them,
// Warn — the default — a `Warning` header each, Ignore: nothing). Objects whose fields we do
// not list in full (pod specs, statuses) are `open`: their known fields are typed, others
// pass. `null` is accepted anywhere, as Go decodes it to the zero value. Pure.

import {
  CLUSTERROLEBINDINGS,
  CLUSTERROLES,
  CONFIGMAPS,
  CONTROLLERREVISIONS,
  DAEMONSETS,
  DEPLOYMENTS,
  ENDPOINTS,
  ENDPOINTSLICES,
  EVENTS,
  NAMESPACES,
  NODES,
  PODS,
  REPLICASETS,
  ROLEBINDINGS,
  ROLES,
  SERVICEACCOUNTS,
  SERVICECIDRS,
  SERVICES,
  STATEFULSETS,
  type ResourceType,
} from './resources.js';
import { ApiError, fieldCause, type StatusCause } from './status.js';

export type FieldType =
  | 'string'
  | 'integer'
  | 'boolean'
  | 'intOrString'
  | 'quantity'
  | 'any'
  | { readonly list: FieldType }
  | { readonly map: FieldType }
  | { readonly fields: Readonly<Record<string, FieldType>>; readonly open?: boolean };

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export interface SchemaResult {
  /** Fields of the wrong type (422). */
  readonly causes: StatusCause[];
  /** Paths of fields the schema does not know (for fieldValidation). */
  readonly unknown: string[];
}

const S = 'string';
const I = 'integer';
const B = 'boolean';
const strings = { list: S } as const;
const stringMap = { map: S } as const;
const closed = (fields: Record<string, FieldType>): FieldType => ({ fields });
const open = (fields: Record<string, FieldType>): FieldType => ({ fields, open: true });

const OBJECT_META = closed({
  name: S,
  generateName: S,
  namespace: S,
  selfLink: S,
  uid: S,
  resourceVersion: S,
  generation: I,
  creationTimestamp: S,
  deletionTimestamp: S,
  deletionGracePeriodSeconds: I,
  labels: stringMap,
  annotations: stringMap,
  ownerReferences: {
    list: closed({ apiVersion: S, kind: S, name: S, uid: S, controller: B, blockOwnerDeletion: B }),
  },
  finalizers: strings,
  managedFields: { list: 'any' },
});

const LABEL_SELECTOR = closed({
  matchLabels: stringMap,
  matchExpressions: { list: closed({ key: S, operator: S, values: strings }) },
});

const CONTAINER = open({
  name: S,
  image: S,
  command: strings,
  args: strings,
  workingDir: S,
  ports: {
    list: closed({ name: S, hostPort: I, containerPort: I, protocol: S, hostIP: S }),
  },
  env: { list: open({ name: S, value: S }) },
  imagePullPolicy: S,
  resources: open({ limits: { map: 'quantity' }, requests: { map: 'quantity' } }),
});

const POD_SPEC = open({
  containers: { list: CONTAINER },
  initContainers: { list: CONTAINER },
  restartPolicy: S,
  terminationGracePeriodSeconds: I,
  activeDeadlineSeconds: I,
  dnsPolicy: S,
  nodeSelector: stringMap,
  serviceAccountName: S,
  nodeName: S,
  hostNetwork: B,
  hostname: S,
  subdomain: S,
  schedulerName: S,
  priority: I,
  enableServiceLinks: B,
});

const POD_TEMPLATE = closed({ metadata: OBJECT_META, spec: POD_SPEC });

const SERVICE_SPEC = closed({
  ports: {
    list: closed({
      name: S,
      protocol: S,
      appProtocol: S,
      port: I,
      targetPort: 'intOrString',
      nodePort: I,
    }),
  },
  selector: stringMap,
  clusterIP: S,
  clusterIPs: strings,
  type: S,
  externalIPs: strings,
  sessionAffinity: S,
  loadBalancerIP: S,
  loadBalancerSourceRanges: strings,
  externalName: S,
  externalTrafficPolicy: S,
  healthCheckNodePort: I,
  publishNotReadyAddresses: B,
  sessionAffinityConfig: open({ clientIP: open({ timeoutSeconds: I }) }),
  ipFamilies: strings,
  ipFamilyPolicy: S,
  allocateLoadBalancerNodePorts: B,
  loadBalancerClass: S,
  internalTrafficPolicy: S,
  trafficDistribution: S,
});

const DEPLOYMENT_SPEC = closed({
  replicas: I,
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE,
  strategy: closed({
    type: S,
    rollingUpdate: closed({ maxUnavailable: 'intOrString', maxSurge: 'intOrString' }),
  }),
  minReadySeconds: I,
  revisionHistoryLimit: I,
  paused: B,
  progressDeadlineSeconds: I,
});

const REPLICASET_SPEC = closed({
  replicas: I,
  minReadySeconds: I,
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE,
});

const STATEFULSET_SPEC = closed({
  replicas: I,
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE,
  volumeClaimTemplates: { list: 'any' },
  serviceName: S,
  podManagementPolicy: S,
  updateStrategy: closed({
    type: S,
    rollingUpdate: open({ partition: I, maxUnavailable: 'intOrString' }),
  }),
  revisionHistoryLimit: I,
  minReadySeconds: I,
  persistentVolumeClaimRetentionPolicy: closed({ whenDeleted: S, whenScaled: S }),
  ordinals: closed({ start: I }),
});

const DAEMONSET_SPEC = closed({
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE,
  updateStrategy: closed({
    type: S,
    rollingUpdate: closed({ maxUnavailable: 'intOrString', maxSurge: 'intOrString' }),
  }),
  minReadySeconds: I,
  revisionHistoryLimit: I,
});

const POLICY_RULES = {
  list: closed({
    apiGroups: strings,
    resources: strings,
    verbs: strings,
    resourceNames: strings,
    nonResourceURLs: strings,
  }),
} as const;
const ROLE = { rules: POLICY_RULES };
const BINDING = {
  roleRef: closed({ apiGroup: S, kind: S, name: S }),
  subjects: { list: closed({ kind: S, apiGroup: S, name: S, namespace: S }) },
};

const STATUS = open({});

/** The top level of each kind (apiVersion, kind and metadata are added to every one). */
const KINDS = new Map<ResourceType, Record<string, FieldType>>([
  [NAMESPACES, { spec: closed({ finalizers: strings }), status: STATUS }],
  [
    NODES,
    {
      spec: open({ podCIDR: S, podCIDRs: strings, unschedulable: B, providerID: S }),
      status: STATUS,
    },
  ],
  [PODS, { spec: POD_SPEC, status: STATUS }],
  [SERVICES, { spec: SERVICE_SPEC, status: STATUS }],
  [
    ENDPOINTS,
    {
      subsets: {
        list: open({
          addresses: { list: open({ ip: S, hostname: S, nodeName: S }) },
          ports: { list: open({ name: S, port: I, protocol: S }) },
        }),
      },
    },
  ],
  [
    EVENTS,
    {
      involvedObject: open({
        kind: S,
        namespace: S,
        name: S,
        uid: S,
        apiVersion: S,
        resourceVersion: S,
        fieldPath: S,
      }),
      reason: S,
      message: S,
      source: open({ component: S, host: S }),
      firstTimestamp: S,
      lastTimestamp: S,
      count: I,
      type: S,
      eventTime: S,
      series: 'any',
      action: S,
      related: 'any',
      reportingComponent: S,
      reportingInstance: S,
    },
  ],
  [CONFIGMAPS, { data: stringMap, binaryData: stringMap, immutable: B }],
  [
    ENDPOINTSLICES,
    {
      addressType: S,
      endpoints: { list: open({ addresses: strings, hostname: S, nodeName: S, zone: S }) },
      ports: { list: open({ name: S, port: I, protocol: S, appProtocol: S }) },
    },
  ],
  [DEPLOYMENTS, { spec: DEPLOYMENT_SPEC, status: STATUS }],
  [REPLICASETS, { spec: REPLICASET_SPEC, status: STATUS }],
  [STATEFULSETS, { spec: STATEFULSET_SPEC, status: STATUS }],
  [DAEMONSETS, { spec: DAEMONSET_SPEC, status: STATUS }],
  [CONTROLLERREVISIONS, { data: 'any', revision: I }],
  [
    SERVICEACCOUNTS,
    {
      secrets: { list: open({ name: S, namespace: S }) },
      imagePullSecrets: { list: closed({ name: S }) },
      automountServiceAccountToken: B,
    },
  ],
  [CLUSTERROLES, { ...ROLE, aggregationRule: open({ clusterRoleSelectors: { list: 'any' } }) }],
  [ROLES, ROLE],
  [CLUSTERROLEBINDINGS, BINDING],
  [ROLEBINDINGS, BINDING],
  [SERVICECIDRS, { spec: closed({ cidrs: strings }), status: STATUS }],
]);

/** The schema of a served kind's object. */
export function schemaOf(rt: ResourceType): FieldType {
  return closed({ apiVersion: S, kind: S, metadata: OBJECT_META, ...(KINDS.get(rt) ?? {}) });
}

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Checks `value` against `type`, iteratively (bodies are depth-limited, but the check must
 * not recurse either). Wrong types become causes; unknown fields of closed objects, paths.
 */
export function checkSchema(value: unknown, type: FieldType): SchemaResult {
  const causes: StatusCause[] = [];
  const unknown: string[] = [];
  const stack: [unknown, FieldType, string][] = [[value, type, '']];
  const wrong = (path: string, want: string, v: unknown): void => {
    causes.push(
      fieldCause('FieldValueInvalid', path, `must be of type ${want}, not ${typeName(v)}`, v),
    );
  };
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, t, path] = top;
    if (v === null || t === 'any') continue;
    if (t === 'string') {
      if (typeof v !== 'string') wrong(path, 'string', v);
    } else if (t === 'integer') {
      if (typeof v !== 'number' || !Number.isInteger(v)) wrong(path, 'integer', v);
    } else if (t === 'boolean') {
      if (typeof v !== 'boolean') wrong(path, 'boolean', v);
    } else if (t === 'intOrString' || t === 'quantity') {
      if (
        typeof v !== 'string' &&
        !(typeof v === 'number' && (t === 'quantity' || Number.isInteger(v)))
      )
        wrong(path, t === 'quantity' ? 'string or number' : 'string or integer', v);
    } else if ('list' in t) {
      if (!Array.isArray(v)) wrong(path, 'array', v);
      else v.forEach((item: unknown, i) => stack.push([item, t.list, `${path}[${i}]`]));
    } else if (typeof v !== 'object' || Array.isArray(v)) {
      wrong(path, 'object', v);
    } else if ('map' in t) {
      for (const [k, item] of Object.entries(v as Record<string, unknown>))
        stack.push([item, t.map, join(path, k)]);
    } else {
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
        const ft = t.fields[k];
        if (ft !== undefined) stack.push([item, ft, join(path, k)]);
        else if (t.open !== true) unknown.push(join(path, k));
      }
    }
  }
  unknown.sort();
  return { causes: causes.reverse(), unknown };
}

/**
 * Checks a body (or a patched object) against its kind's schema: a field of the wrong type is
 * a 422 ApiError naming it; otherwise returns the unknown fields (for `fieldValidation`). A
 * body that is not an object is left to the store's own checks.
 */
export function checkBodySchema(rt: ResourceType, body: unknown): readonly string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const { causes, unknown } = checkSchema(body, schemaOf(rt));
  if (causes.length > 0) {
    const meta = (body as { metadata?: { name?: unknown } }).metadata;
    const name = typeof meta?.name === 'string' ? meta.name : '';
    throw ApiError.invalid(rt.group, rt.kind, name, causes);
  }
  return unknown;
}

/** The `fieldValidation` query parameter; undefined when it is not a supported value. */
export function parseFieldValidation(v: string | undefined): FieldValidation | undefined {
  if (v === undefined || v === '') return 'Warn';
  return v === 'Strict' || v === 'Warn' || v === 'Ignore' ? v : undefined;
}
