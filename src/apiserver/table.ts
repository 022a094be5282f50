// Server-side printing: `meta.k8s.io/v1` Table conversion with the columns kube-apiserver's
// printers give each kind (services, pods, endpoints, endpointslices, deployments,
// replicasets, statefulsets, nodes, namespaces, events, configmaps, servicecidrs), `-o wide` columns as
// priority 1, and the "human duration" Age format. Pure: the current time is a parameter.

import type { StoredObject } from './object.js';
import { parseTime } from './object.js';
import type { ResourceType } from './resources.js';
import { formatLabelSelectorObject } from './selectors.js';

export interface ColumnDefinition {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

export interface TableRow {
  readonly cells: unknown[];
  readonly object: unknown;
}

export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: ColumnDefinition[];
  rows: TableRow[];
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

type Loose = Record<string, unknown>;
type Cell = string | number;

interface Printer {
  readonly columns: ColumnDefinition[];
  readonly cells: (o: Loose, now: number) => Cell[];
}

function col(
  name: string,
  priority = 0,
  type: ColumnDefinition['type'] = 'string',
  format = '',
): ColumnDefinition {
  return { name, type, format, description: `${name} column`, priority };
}

const NAME = col('Name', 0, 'string', 'name');
const AGE = col('Age', 0, 'string');

function o(v: unknown): Loose {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Loose) : {};
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function s(v: unknown, dflt = ''): string {
  return typeof v === 'string'
    ? v
    : typeof v === 'number' || typeof v === 'boolean'
      ? String(v)
      : dflt;
}

function n(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

/** apimachinery's HumanDuration. */
export function humanDuration(ms: number): string {
  const secs = Math.floor(ms / 1000);
  if (secs < 0) return '0s';
  if (secs < 120) return `${secs}s`;
  const mins = Math.floor(secs / 60);
  if (mins < 10) {
    const rem = secs % 60;
    return rem === 0 ? `${mins}m` : `${mins}m${rem}s`;
  }
  const hours = Math.floor(secs / 3600);
  if (hours < 3) return `${mins}m`;
  if (hours < 8) {
    const rem = mins % 60;
    return rem === 0 ? `${hours}h` : `${hours}h${rem}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) {
    const rem = hours % 24;
    return rem === 0 ? `${days}d` : `${days}d${rem}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) {
    const rem = days % 365;
    return rem === 0 ? `${years}y` : `${years}y${rem}d`;
  }
  return `${years}y`;
}

function age(obj: Loose, now: number): string {
  const t = parseTime(s(o(obj.metadata).creationTimestamp, ''));
  return t === undefined ? '<unknown>' : humanDuration(now - t);
}

function name(obj: Loose): string {
  return s(o(obj.metadata).name);
}

function joinFirst(items: string[], max: number, empty: string): string {
  if (items.length === 0) return empty;
  const shown = items.slice(0, max).join(',');
  return items.length > max ? `${shown} + ${items.length - max} more...` : shown;
}

function mapSelector(sel: unknown): string {
  const entries = Object.entries(o(sel)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${s(v)}`).join(',');
}

function servicePorts(spec: Loose): string {
  const ports = arr(spec.ports).map((p) => {
    const po = o(p);
    const proto = s(po.protocol, 'TCP');
    return po.nodePort !== undefined
      ? `${n(po.port)}:${n(po.nodePort)}/${proto}`
      : `${n(po.port)}/${proto}`;
  });
  return ports.length === 0 ? '<none>' : ports.join(',');
}

function externalIP(svc: Loose): string {
  const spec = o(svc.spec);
  const type = s(spec.type, 'ClusterIP');
  const ext = arr(spec.externalIPs).map((x) => s(x));
  switch (type) {
    case 'ClusterIP':
    case 'NodePort':
      return ext.length > 0 ? ext.join(',') : '<none>';
    case 'ExternalName':
      return s(spec.externalName);
    case 'LoadBalancer': {
      const ing = arr(o(o(svc.status).loadBalancer).ingress).map(
        (i) => s(o(i).ip) || s(o(i).hostname),
      );
      const all = [...ing, ...ext].filter((x) => x !== '');
      return all.length > 0 ? all.join(',') : '<pending>';
    }
    default:
      return '<unknown>';
  }
}

/** The wide columns of a workload with a pod template: what containersAndImages fills. */
const TEMPLATE_COLUMNS = [col('Containers', 1), col('Images', 1)];

function containersAndImages(template: Loose): [string, string] {
  const cs = arr(o(template.spec).containers).map(o);
  return [cs.map((c) => s(c.name)).join(','), cs.map((c) => s(c.image)).join(',')];
}

function podStatus(pod: Loose): { ready: string; status: string; restarts: string } {
  const spec = o(pod.spec);
  const st = o(pod.status);
  const total = arr(spec.containers).length;
  let ready = 0;
  let restarts = 0;
  let reason = s(st.reason) || s(st.phase, 'Unknown');
  for (const cs of arr(st.containerStatuses).map(o)) {
    restarts += n(cs.restartCount);
    if (cs.ready === true) ready++;
    const state = o(cs.state);
    const waiting = o(state.waiting);
    const terminated = o(state.terminated);
    if (s(waiting.reason) !== '') reason = s(waiting.reason);
    else if (s(terminated.reason) !== '') reason = s(terminated.reason);
  }
  if (o(pod.metadata).deletionTimestamp !== undefined) reason = 'Terminating';
  return { ready: `${ready}/${total}`, status: reason, restarts: String(restarts) };
}

function nodeStatus(node: Loose): string {
  const conds = arr(o(node.status).conditions).map(o);
  const ready = conds.find((c) => c.type === 'Ready');
  let st =
    ready === undefined
      ? 'Unknown'
      : ready.status === 'True'
        ? 'Ready'
        : ready.status === 'False'
          ? 'NotReady'
          : 'Unknown';
  if (o(node.spec).unschedulable === true) st += ',SchedulingDisabled';
  return st;
}

function nodeRoles(node: Loose): string {
  const roles: string[] = [];
  for (const [k, v] of Object.entries(o(o(node.metadata).labels))) {
    if (k.startsWith('node-role.kubernetes.io/'))
      roles.push(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role') roles.push(s(v));
  }
  return roles.length === 0 ? '<none>' : roles.sort().join(',');
}

function nodeAddress(node: Loose, type: string): string {
  const a = arr(o(node.status).addresses)
    .map(o)
    .find((x) => x.type === type);
  return a ? s(a.address) : '<none>';
}

/** Roles and ClusterRoles: kubectl's NAME, CREATED AT. */
const ROLE_PRINTER: Printer = {
  columns: [NAME, col('Created At', 0, 'date')],
  cells: (r) => [name(r), s(o(r.metadata).creationTimestamp)],
};

/** Bindings: the role, then (wide) users, groups and service accounts bound. */
const BINDING_PRINTER: Printer = {
  columns: [NAME, col('Role'), AGE, col('Users', 1), col('Groups', 1), col('ServiceAccounts', 1)],
  cells: (b, now) => {
    const ref = o(b.roleRef);
    const subjects = arr(b.subjects).map(o);
    const of = (kind: string): string =>
      subjects
        .filter((x) => s(x.kind) === kind)
        .map((x) => (kind === 'ServiceAccount' ? `${s(x.namespace)}/${s(x.name)}` : s(x.name)))
        .join(', ');
    return [
      name(b),
      `${s(ref.kind)}/${s(ref.name)}`,
      age(b, now),
      of('User'),
      of('Group'),
      of('ServiceAccount'),
    ];
  },
};

const PRINTERS: Record<string, Printer> = {
  Service: {
    columns: [
      NAME,
      col('Type'),
      col('Cluster-IP'),
      col('External-IP'),
      col('Port(s)'),
      AGE,
      col('Selector', 1),
    ],
    cells: (svc, now) => {
      const spec = o(svc.spec);
      const cip = s(spec.clusterIP);
      return [
        name(svc),
        s(spec.type, 'ClusterIP'),
        cip === '' ? '<none>' : cip,
        externalIP(svc),
        servicePorts(spec),
        age(svc, now),
        mapSelector(spec.selector),
      ];
    },
  },
  Pod: {
    columns: [
      NAME,
      col('Ready'),
      col('Status'),
      col('Restarts', 0, 'string'),
      AGE,
      col('IP', 1),
      col('Node', 1),
      col('Nominated Node', 1),
      col('Readiness Gates', 1),
    ],
    cells: (pod, now) => {
      const st = podStatus(pod);
      const status = o(pod.status);
      const gates = arr(o(pod.spec).readinessGates).map(o);
      const conds = arr(status.conditions).map(o);
      const gatesCell =
        gates.length === 0
          ? '<none>'
          : `${gates.filter((g) => conds.some((c) => c.type === g.conditionType && c.status === 'True')).length}/${gates.length}`;
      return [
        name(pod),
        st.ready,
        st.status,
        st.restarts,
        age(pod, now),
        s(status.podIP) || '<none>',
        s(o(pod.spec).nodeName) || '<none>',
        s(status.nominatedNodeName) || '<none>',
        gatesCell,
      ];
    },
  },
  Endpoints: {
    columns: [NAME, col('Endpoints'), AGE],
    cells: (ep, now) => {
      const list: string[] = [];
      for (const ss of arr(ep.subsets).map(o)) {
        const addrs = arr(ss.addresses).map((a) => s(o(a).ip));
        const ports = arr(ss.ports).map((p) => n(o(p).port));
        for (const a of addrs) {
          if (ports.length === 0) list.push(a);
          for (const p of ports) list.push(a.includes(':') ? `[${a}]:${p}` : `${a}:${p}`);
        }
      }
      return [name(ep), joinFirst(list, 3, '<none>'), age(ep, now)];
    },
  },
  EndpointSlice: {
    columns: [NAME, col('AddressType'), col('Ports'), col('Endpoints'), AGE],
    cells: (es, now) => {
      const ports = arr(es.ports).map((p) => {
        const port = o(p).port;
        return port === undefined || port === null ? '<unset>' : String(n(port));
      });
      const addrs = arr(es.endpoints).flatMap((e) => arr(o(e).addresses).map((a) => s(a)));
      return [
        name(es),
        s(es.addressType),
        joinFirst(ports, 3, '<unset>'),
        joinFirst(addrs, 3, '<unset>'),
        age(es, now),
      ];
    },
  },
  Deployment: {
    columns: [
      NAME,
      col('Ready'),
      col('Up-to-date', 0, 'integer'),
      col('Available', 0, 'integer'),
      AGE,
      ...TEMPLATE_COLUMNS,
      col('Selector', 1),
    ],
    cells: (d, now) => {
      const spec = o(d.spec);
      const st = o(d.status);
      return [
        name(d),
        `${n(st.readyReplicas)}/${n(spec.replicas)}`,
        n(st.updatedReplicas),
        n(st.availableReplicas),
        age(d, now),
        ...containersAndImages(o(spec.template)),
        formatLabelSelectorObject(o(spec.selector)),
      ];
    },
  },
  ReplicaSet: {
    columns: [
      NAME,
      col('Desired', 0, 'integer'),
      col('Current', 0, 'integer'),
      col('Ready', 0, 'integer'),
      AGE,
      ...TEMPLATE_COLUMNS,
      col('Selector', 1),
    ],
    cells: (rs, now) => {
      const spec = o(rs.spec);
      const st = o(rs.status);
      return [
        name(rs),
        n(spec.replicas),
        n(st.replicas),
        n(st.readyReplicas),
        age(rs, now),
        ...containersAndImages(o(spec.template)),
        formatLabelSelectorObject(o(spec.selector)),
      ];
    },
  },
  StatefulSet: {
    columns: [NAME, col('Ready'), AGE, ...TEMPLATE_COLUMNS],
    cells: (ss, now) => {
      const spec = o(ss.spec);
      return [
        name(ss),
        `${n(o(ss.status).readyReplicas)}/${n(spec.replicas)}`,
        age(ss, now),
        ...containersAndImages(o(spec.template)),
      ];
    },
  },
  DaemonSet: {
    columns: [
      NAME,
      col('Desired', 0, 'integer'),
      col('Current', 0, 'integer'),
      col('Ready', 0, 'integer'),
      col('Up-to-date', 0, 'integer'),
      col('Available', 0, 'integer'),
      col('Node Selector'),
      AGE,
      ...TEMPLATE_COLUMNS,
      col('Selector', 1),
    ],
    cells: (ds, now) => {
      const spec = o(ds.spec);
      const st = o(ds.status);
      return [
        name(ds),
        n(st.desiredNumberScheduled),
        n(st.currentNumberScheduled),
        n(st.numberReady),
        n(st.updatedNumberScheduled),
        n(st.numberAvailable),
        mapSelector(o(o(spec.template).spec).nodeSelector),
        age(ds, now),
        ...containersAndImages(o(spec.template)),
        formatLabelSelectorObject(o(spec.selector)),
      ];
    },
  },
  ControllerRevision: {
    columns: [NAME, col('Controller'), col('Revision', 0, 'integer'), AGE],
    cells: (cr, now) => {
      const owner = arr(o(cr.metadata).ownerReferences)
        .map(o)
        .find((ref) => ref.controller === true);
      const group = s(owner?.apiVersion).split('/');
      const kind = s(owner?.kind).toLowerCase();
      const controller =
        owner === undefined
          ? '<none>'
          : `${kind}${group.length === 2 ? `.${group[0] ?? ''}` : ''}/${s(owner.name)}`;
      return [name(cr), controller, n(cr.revision), age(cr, now)];
    },
  },
  ServiceAccount: {
    columns: [NAME, col('Secrets', 0, 'integer'), AGE],
    cells: (sa, now) => [name(sa), arr(sa.secrets).length, age(sa, now)],
  },
  ClusterRole: ROLE_PRINTER,
  Role: ROLE_PRINTER,
  ClusterRoleBinding: BINDING_PRINTER,
  RoleBinding: BINDING_PRINTER,
  Node: {
    columns: [
      NAME,
      col('Status'),
      col('Roles'),
      AGE,
      col('Version'),
      col('Internal-IP', 1),
      col('External-IP', 1),
      col('OS-Image', 1),
      col('Kernel-Version', 1),
      col('Container-Runtime', 1),
    ],
    cells: (node, now) => {
      const info = o(o(node.status).nodeInfo);
      return [
        name(node),
        nodeStatus(node),
        nodeRoles(node),
        age(node, now),
        s(info.kubeletVersion),
        nodeAddress(node, 'InternalIP'),
        nodeAddress(node, 'ExternalIP'),
        s(info.osImage) || '<unknown>',
        s(info.kernelVersion) || '<unknown>',
        s(info.containerRuntimeVersion) || '<unknown>',
      ];
    },
  },
  ServiceCIDR: {
    columns: [NAME, col('CIDRs'), AGE],
    cells: (sc, now) => [
      name(sc),
      arr(o(sc.spec).cidrs)
        .map((c) => s(c))
        .join(','),
      age(sc, now),
    ],
  },
  Namespace: {
    columns: [NAME, col('Status'), AGE],
    cells: (ns, now) => [name(ns), s(o(ns.status).phase), age(ns, now)],
  },
  ConfigMap: {
    columns: [NAME, col('Data', 0, 'integer'), AGE],
    cells: (cm, now) => [
      name(cm),
      Object.keys(o(cm.data)).length + Object.keys(o(cm.binaryData)).length,
      age(cm, now),
    ],
  },
  Event: {
    columns: [
      col('Last Seen'),
      col('Type'),
      col('Reason'),
      col('Object'),
      col('Subobject', 1),
      col('Source', 1),
      col('Message'),
      col('First Seen', 1),
      col('Count', 1, 'integer'),
      col('Name', 1, 'string', 'name'),
    ],
    cells: (ev, now) => {
      const io = o(ev.involvedObject);
      const src = o(ev.source);
      const last = parseTime(
        s(ev.lastTimestamp) || s(ev.eventTime) || s(o(ev.metadata).creationTimestamp),
      );
      const first = parseTime(
        s(ev.firstTimestamp) || s(ev.eventTime) || s(o(ev.metadata).creationTimestamp),
      );
      const srcText = s(src.component) + (s(src.host) !== '' ? `, ${s(src.host)}` : '');
      return [
        last === undefined ? '<unknown>' : humanDuration(now - last),
        s(ev.type),
        s(ev.reason),
        `${s(io.kind).toLowerCase()}/${s(io.name)}`,
        s(io.fieldPath),
        srcText || s(ev.reportingComponent),
        s(ev.message),
        first === undefined ? '<unknown>' : humanDuration(now - first),
        n(ev.count) || 1,
        name(ev),
      ];
    },
  },
};

const DEFAULT_PRINTER: Printer = {
  columns: [NAME, AGE],
  cells: (x, now) => [name(x), age(x, now)],
};

function rowObject(obj: StoredObject, include: IncludeObject): unknown {
  if (include === 'None') return null;
  if (include === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

export function columnsFor(rt: ResourceType): ColumnDefinition[] {
  return (PRINTERS[rt.kind] ?? DEFAULT_PRINTER).columns;
}

/** Converts objects to a Table; `withColumns: false` omits column definitions (watch events after the first). */
export function toTable(
  rt: ResourceType,
  objects: readonly StoredObject[],
  now: number,
  opts: { include?: IncludeObject; withColumns?: boolean; metadata?: Table['metadata'] } = {},
): Table {
  const printer = PRINTERS[rt.kind] ?? DEFAULT_PRINTER;
  const include = opts.include ?? 'Metadata';
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: opts.metadata ?? {},
    columnDefinitions: opts.withColumns === false ? [] : printer.columns,
    rows: objects.map((x) => ({
      cells: printer.cells(x as Loose, now),
      object: rowObject(x, include),
    })),
  };
}
