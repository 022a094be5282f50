// Service registry behaviour as kube-apiserver has it: static defaulting (type, protocol,
// targetPort, traffic policies, session affinity timeout 10800), IP family fields from the
// cluster's service CIDRs (ipFamilies / ipFamilyPolicy, headless and selector-less rules),
// ClusterIP and NodePort allocation with the upstream error messages, healthCheckNodePort for
// externalTrafficPolicy=Local load balancers, keeping allocated values across updates that
// omit them, releasing and allocating what a type change drops or needs (the dropping itself
// is service-types.ts), and the checks src/kube/validate.ts does not make (DNS-1035 name,
// immutability, ranges, families, fields a type may not carry). Pure apart from the
// allocators' state.

import type { IPFamilyName, Service, ServicePort, ServiceSpec } from '../kube/types.js';
import { validateService } from '../kube/validate.js';
import { formatCIDR, parseIPSloppy } from '../util/ip.js';
import { clone, isPlainObject } from '../util/json.js';
import { ClusterIPAllocator, NodePortAllocator, type AllocateResult } from './allocator.js';
import type { StoredObject } from './object.js';
import { ApiError, causeFromFieldError, fieldCause, type StatusCause } from './status.js';
import {
  dropTypeDependentFields,
  externallyAccessible,
  needsClusterIP,
  needsHealthCheckNodePort,
  needsNodePort,
  shouldAllocateNodePorts,
} from './service-types.js';
import type { Strategy, StrategyContext } from './store.js';

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

export interface ServiceNetworkConfig {
  /** One or two CIDRs (primary first), e.g. `10.96.0.0/12`. */
  readonly serviceCIDRs: readonly string[];
  /** Inclusive, e.g. `30000-32767`. */
  readonly nodePortRange: string;
  readonly random?: () => number;
}

function spec(o: StoredObject): ServiceSpec {
  const s = (o as Service).spec;
  if (s === undefined) {
    const fresh: ServiceSpec = {};
    (o as Service).spec = fresh;
    return fresh;
  }
  return s;
}

function isHeadless(s: ServiceSpec): boolean {
  return s.clusterIP === 'None' || s.clusterIPs?.[0] === 'None';
}

/** SetDefaults_Service: the defaults that do not depend on cluster configuration. */
export function defaultServiceSpec(s: ServiceSpec): void {
  s.type ??= 'ClusterIP';
  s.sessionAffinity ??= 'None';
  if (s.sessionAffinity === 'None') delete s.sessionAffinityConfig;
  else {
    s.sessionAffinityConfig ??= {};
    s.sessionAffinityConfig.clientIP ??= {};
    s.sessionAffinityConfig.clientIP.timeoutSeconds ??= 10800;
  }
  for (const p of s.ports ?? []) {
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '')
      p.targetPort = p.port;
    if (p.nodePort === 0) delete p.nodePort;
  }
  if (externallyAccessible(s) && s.externalTrafficPolicy === undefined)
    s.externalTrafficPolicy = 'Cluster';
  if (s.type !== 'ExternalName' && s.internalTrafficPolicy === undefined)
    s.internalTrafficPolicy = 'Cluster';
  if (s.type === 'LoadBalancer') s.allocateLoadBalancerNodePorts ??= true;
  if (s.clusterIP === '') delete s.clusterIP;
}

/** A port number repeated for the same protocol. */
function duplicatePortCauses(s: ServiceSpec): StatusCause[] {
  const causes: StatusCause[] = [];
  const ports = s.ports ?? [];
  const seen = new Set<string>();
  ports.forEach((p, i) => {
    const key = `${p.port}/${p.protocol ?? 'TCP'}`;
    if (seen.has(key))
      causes.push(
        fieldCause('FieldValueDuplicate', `spec.ports[${i}]`, '', {
          port: p.port,
          protocol: p.protocol,
        }),
      );
    seen.add(key);
  });
  return causes;
}

/** clusterIPs against clusterIP, ipFamilies and ipFamilyPolicy. */
function clusterIPsCauses(s: ServiceSpec): StatusCause[] {
  const causes: StatusCause[] = [];
  const ips = s.clusterIPs ?? [];
  if (s.clusterIP !== undefined && ips.length > 0 && ips[0] !== s.clusterIP)
    causes.push(
      fieldCause(
        'FieldValueInvalid',
        'spec.clusterIPs',
        'first value must match `spec.clusterIP`',
        ips,
      ),
    );
  ips.forEach((ip, i) => {
    if (ip === 'None') return;
    const fam = parseIPSloppy(ip)?.family;
    const want = s.ipFamilies?.[i];
    if (fam !== undefined && want !== undefined && fam !== want)
      causes.push(
        fieldCause(
          'FieldValueInvalid',
          `spec.clusterIPs[${i}]`,
          `expected an ${want} value as indicated by \`ipFamilies[${i}]\``,
          ip,
        ),
      );
  });
  if (s.ipFamilyPolicy === 'SingleStack' && ips.length > 1)
    causes.push(
      fieldCause(
        'FieldValueInvalid',
        'spec.clusterIPs',
        'when spec.ipFamilyPolicy is SingleStack, only one clusterIP is allowed',
        ips,
      ),
    );
  return causes;
}

/** Cluster IPs may not change once set (ExternalName transitions aside). */
function immutableIPCauses(s: ServiceSpec, o: ServiceSpec): StatusCause[] {
  const causes: StatusCause[] = [];
  if (o.type !== 'ExternalName' && s.type !== 'ExternalName') {
    const oldIPs = o.clusterIPs ?? [];
    const newIPs = s.clusterIPs ?? [];
    oldIPs.forEach((ip, i) => {
      const n = newIPs[i];
      if (n !== undefined && n !== ip)
        causes.push(
          fieldCause('FieldValueInvalid', `spec.clusterIPs[${i}]`, 'may not change once set', n),
        );
    });
    if (
      o.clusterIP !== undefined &&
      s.clusterIP !== undefined &&
      o.clusterIP !== s.clusterIP &&
      oldIPs.length === 0
    )
      causes.push(
        fieldCause('FieldValueInvalid', 'spec.clusterIP', 'field is immutable', s.clusterIP),
      );
  }
  return causes;
}

/** Node ports the client left out, from the old port with the same port/protocol, else name. */
function keepNodePorts(s: ServiceSpec, o: ServiceSpec): void {
  const ports = s.ports ?? [];
  const used = new Set(ports.map((p) => p.nodePort));
  for (const p of ports) {
    if (p.nodePort !== undefined) continue;
    const prev =
      (o.ports ?? []).find((q) => q.port === p.port && (q.protocol ?? 'TCP') === p.protocol) ??
      (o.ports ?? []).find((q) => q.name !== undefined && q.name === p.name);
    if (prev?.nodePort !== undefined && !used.has(prev.nodePort)) {
      p.nodePort = prev.nodePort;
      used.add(prev.nodePort);
    }
  }
}

/** An ExternalName Service has no cluster IP and no IP family fields. */
function externalNameCauses(s: ServiceSpec): StatusCause[] {
  const forbidden = (field: string): StatusCause =>
    fieldCause('FieldValueForbidden', field, 'may not be set for ExternalName services');
  const causes: StatusCause[] = [];
  if (s.clusterIP !== undefined && s.clusterIP !== '') causes.push(forbidden('spec.clusterIP'));
  else if ((s.clusterIPs ?? []).length > 0) causes.push(forbidden('spec.clusterIPs'));
  if ((s.ipFamilies ?? []).length > 0) causes.push(forbidden('spec.ipFamilies'));
  if (s.ipFamilyPolicy !== undefined) causes.push(forbidden('spec.ipFamilyPolicy'));
  return causes;
}

/**
 * Fields only some types may carry (validateServiceExternalTrafficPolicy and the
 * LoadBalancer-only fields of kube-apiserver's ValidateService). An update that changes the
 * type reaches here only with the values the client set anew (service-types.ts drops the rest).
 */
function typeDependentCauses(s: ServiceSpec): StatusCause[] {
  const causes: StatusCause[] = [];
  if (s.externalTrafficPolicy !== undefined && !externallyAccessible(s))
    causes.push(
      fieldCause(
        'FieldValueInvalid',
        'spec.externalTrafficPolicy',
        'may only be set for externally-accessible services',
        s.externalTrafficPolicy,
      ),
    );
  if (s.healthCheckNodePort !== undefined && !needsHealthCheckNodePort(s))
    causes.push(
      fieldCause(
        'FieldValueInvalid',
        'spec.healthCheckNodePort',
        "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        s.healthCheckNodePort,
      ),
    );
  if (s.type !== 'LoadBalancer') {
    const lbOnly = "may only be used when `type` is 'LoadBalancer'";
    if (s.allocateLoadBalancerNodePorts !== undefined)
      causes.push(fieldCause('FieldValueForbidden', 'spec.allocateLoadBalancerNodePorts', lbOnly));
    if (s.loadBalancerClass !== undefined)
      causes.push(fieldCause('FieldValueForbidden', 'spec.loadBalancerClass', lbOnly));
  }
  return causes;
}

/** One allocate() call: what it reserved so far (to undo) and what the old object held. */
interface Allocation {
  readonly undo: (() => void)[];
  /** Undoes what was reserved and throws 422 with the causes. */
  readonly fail: (causes: StatusCause[]) => never;
  readonly oldIPs: ReadonlySet<string>;
  readonly oldPorts: ReadonlySet<number>;
  /** Node ports the new object holds. */
  readonly taken: Set<number>;
}

/** The Service strategy with its allocators; one per API server. */
export class ServiceRegistry implements Strategy {
  readonly ipAllocators: ClusterIPAllocator[];
  readonly nodePorts: NodePortAllocator;
  private readonly families: IPFamilyName[];

  constructor(cfg: ServiceNetworkConfig) {
    const random = cfg.random ?? Math.random;
    this.ipAllocators = cfg.serviceCIDRs.map((c) => new ClusterIPAllocator(c, random));
    if (this.ipAllocators.length === 0 || this.ipAllocators.length > 2)
      throw new Error('one or two service CIDRs are required');
    this.families = this.ipAllocators.map((a) => a.family);
    if (this.families.length === 2 && this.families[0] === this.families[1])
      throw new Error('dual-stack service CIDRs must be of different IP families');
    this.nodePorts = new NodePortAllocator(cfg.nodePortRange, random);
  }

  private allocatorFor(family: IPFamilyName): ClusterIPAllocator | undefined {
    return this.ipAllocators.find((a) => a.family === family);
  }

  /** The configured service ranges, canonical, primary first (the default ServiceCIDR's). */
  get serviceCIDRs(): string[] {
    return this.ipAllocators.map((a) => formatCIDR(a.cidr));
  }

  /** The address of the `kubernetes` Service: the first of the primary range. */
  get kubernetesServiceIP(): string {
    return this.ipAllocators[0]?.addressAt(0) ?? '';
  }

  prepareForCreate(obj: StoredObject, _ctx: StrategyContext): void {
    const s = spec(obj);
    defaultServiceSpec(s);
    this.defaultFamilies(s);
    obj.status = { loadBalancer: {} };
  }

  /**
   * PrepareForUpdate and the REST layer's patchAllocatedValues: defaults, then the fields the
   * type change made moot are dropped (service-types.ts), then allocated values the client
   * left out (kubectl replace, PUT of a manifest) are kept when both types need them.
   */
  prepareForUpdate(obj: StoredObject, old: StoredObject, _ctx: StrategyContext): void {
    const s = spec(obj);
    const o = (old as Service).spec ?? {};
    defaultServiceSpec(s);
    dropTypeDependentFields(s, o);
    if (needsClusterIP(s) && needsClusterIP(o)) {
      if ((s.clusterIP === undefined || s.clusterIP === '') && (s.clusterIPs ?? []).length === 0) {
        if (o.clusterIP !== undefined) s.clusterIP = o.clusterIP;
        if (o.clusterIPs !== undefined) s.clusterIPs = [...o.clusterIPs];
      }
      if (s.ipFamilies === undefined && o.ipFamilies !== undefined)
        s.ipFamilies = [...o.ipFamilies];
      if (s.ipFamilyPolicy === undefined && o.ipFamilyPolicy !== undefined)
        s.ipFamilyPolicy = o.ipFamilyPolicy;
    }
    if (needsNodePort(s) && needsNodePort(o)) keepNodePorts(s, o);
    if (
      needsHealthCheckNodePort(s) &&
      needsHealthCheckNodePort(o) &&
      s.healthCheckNodePort === undefined &&
      o.healthCheckNodePort !== undefined
    )
      s.healthCheckNodePort = o.healthCheckNodePort;
    // A load balancer's status goes with the type (kube-apiserver clears it at once).
    const status = isPlainObject(obj.status) ? obj.status : {};
    const lb = status.loadBalancer;
    if (s.type !== 'LoadBalancer' && isPlainObject(lb) && Object.keys(lb).length > 0)
      obj.status = { ...status, loadBalancer: {} };
    this.defaultFamilies(s);
  }

  /** initIPFamilyFields: ipFamilyPolicy, ipFamilies, clusterIP/clusterIPs in step. */
  private defaultFamilies(s: ServiceSpec): void {
    if (s.type === 'ExternalName') return;
    if ((s.clusterIP === undefined || s.clusterIP === '') && (s.clusterIPs ?? []).length > 0)
      s.clusterIP = s.clusterIPs?.[0] ?? '';
    if (s.clusterIP !== undefined && (s.clusterIPs === undefined || s.clusterIPs.length === 0))
      s.clusterIPs = [s.clusterIP];
    const headless = isHeadless(s);
    const selectorless = s.selector === undefined || Object.keys(s.selector).length === 0;
    if (s.ipFamilyPolicy === undefined) {
      if (headless && selectorless) s.ipFamilyPolicy = 'RequireDualStack';
      else if (
        (s.ipFamilies ?? []).length === 2 ||
        (s.clusterIPs ?? []).filter((ip) => ip !== 'None').length === 2
      )
        s.ipFamilyPolicy = 'RequireDualStack';
      else s.ipFamilyPolicy = 'SingleStack';
    }
    if (s.ipFamilies === undefined || s.ipFamilies.length === 0) {
      const fromIPs = (s.clusterIPs ?? [])
        .filter((ip) => ip !== 'None')
        .map((ip) => parseIPSloppy(ip)?.family)
        .filter((f): f is IPFamilyName => f !== undefined);
      const fams: IPFamilyName[] = fromIPs.length > 0 ? [...fromIPs] : [this.families[0] ?? 'IPv4'];
      if (s.ipFamilyPolicy !== 'SingleStack')
        for (const f of this.families) if (!fams.includes(f)) fams.push(f);
      s.ipFamilies = fams;
    } else if (s.ipFamilyPolicy !== 'SingleStack' && s.ipFamilies.length === 1) {
      for (const f of this.families) if (!s.ipFamilies.includes(f)) s.ipFamilies.push(f);
    }
  }

  validate(obj: StoredObject, old: StoredObject | undefined): StatusCause[] {
    const svc = obj as Service;
    const causes = validateService(svc).map(causeFromFieldError);
    const s = svc.spec ?? {};
    const name = obj.metadata.name ?? '';
    if (name !== '' && (name.length > 63 || !DNS1035_LABEL.test(name)))
      causes.push(fieldCause('FieldValueInvalid', 'metadata.name', DNS1035_MSG, name));
    causes.push(...duplicatePortCauses(s));
    if (s.type === 'ExternalName') causes.push(...externalNameCauses(s));
    else causes.push(...this.familyCauses(s), ...clusterIPsCauses(s));
    causes.push(...typeDependentCauses(s));
    if (old) causes.push(...immutableIPCauses(s, (old as Service).spec ?? {}));
    return causes;
  }

  /** Type, traffic policy and IP family rules that depend on this cluster's families. */
  private familyCauses(s: ServiceSpec): StatusCause[] {
    const causes: StatusCause[] = [];
    if (isHeadless(s) && (s.type === 'NodePort' || s.type === 'LoadBalancer'))
      causes.push(
        fieldCause(
          'FieldValueInvalid',
          'spec.clusterIPs[0]',
          `may not be set to 'None' for ${s.type} services`,
          'None',
        ),
      );
    if (
      s.ipFamilyPolicy === 'RequireDualStack' &&
      this.families.length < 2 &&
      !(isHeadless(s) && (s.selector === undefined || Object.keys(s.selector).length === 0))
    )
      causes.push(
        fieldCause(
          'FieldValueInvalid',
          'spec.ipFamilyPolicy',
          'this cluster is not configured for dual-stack services',
          'RequireDualStack',
        ),
      );
    (s.ipFamilies ?? []).forEach((f, i) => {
      if (!this.families.includes(f) && !(isHeadless(s) && s.ipFamilyPolicy !== 'SingleStack'))
        causes.push(
          fieldCause(
            'FieldValueInvalid',
            `spec.ipFamilies[${i}]`,
            'not configured on this cluster',
            f,
          ),
        );
    });
    if ((s.ipFamilies ?? []).length === 2 && s.ipFamilies?.[0] === s.ipFamilies?.[1])
      causes.push(fieldCause('FieldValueDuplicate', 'spec.ipFamilies[1]', '', s.ipFamilies?.[1]));
    if (s.ipFamilyPolicy === 'SingleStack' && (s.ipFamilies ?? []).length > 1)
      causes.push(
        fieldCause(
          'FieldValueInvalid',
          'spec.ipFamilies',
          'when spec.ipFamilyPolicy is SingleStack, only one ipFamily is allowed',
          s.ipFamilies,
        ),
      );
    return causes;
  }

  /** Allocates IPs and node ports; returns an undo. Releases what the update dropped. */
  allocate(obj: StoredObject, old: StoredObject | undefined, ctx: StrategyContext): () => void {
    const s = spec(obj);
    const o: ServiceSpec = old ? ((old as Service).spec ?? {}) : {};
    const name = obj.metadata.name ?? '';
    const undo: (() => void)[] = [];
    const a: Allocation = {
      undo,
      fail: (causes) => {
        for (const u of undo.reverse()) u();
        throw ApiError.invalid('', 'Service', name, causes);
      },
      oldIPs: new Set(
        old && o.type !== 'ExternalName' ? (o.clusterIPs ?? []).filter((ip) => ip !== 'None') : [],
      ),
      oldPorts: new Set<number>(
        old
          ? [...(o.ports ?? []).map((p) => p.nodePort ?? 0), o.healthCheckNodePort ?? 0].filter(
              (p) => p > 0,
            )
          : [],
      ),
      taken: new Set<number>(),
    };
    if (s.type !== 'ExternalName' && !isHeadless(s)) this.allocateClusterIPs(s, a);
    else if (isHeadless(s)) {
      s.clusterIP = 'None';
      s.clusterIPs = ['None'];
    }
    if (needsNodePort(s)) this.allocateNodePorts(s, a, shouldAllocateNodePorts(s));
    if (needsHealthCheckNodePort(s)) this.allocateHealthCheckNodePort(s, a);
    if (old && !ctx.dryRun) this.releaseDropped(s, a);
    return () => {
      for (const u of undo.reverse()) u();
    };
  }

  /** Cluster IPs, one per family: the requested ones reserved, the missing ones picked. */
  private allocateClusterIPs(s: ServiceSpec, a: Allocation): void {
    const fams = s.ipFamilies ?? [];
    const ips = [...(s.clusterIPs ?? [])];
    fams.forEach((fam, i) => {
      const alloc = this.allocatorFor(fam);
      if (!alloc) return;
      const want = ips[i];
      if (want !== undefined && want !== '') {
        if (a.oldIPs.has(want)) return;
        const r = alloc.allocate(want);
        if (!r.ok)
          a.fail([
            fieldCause(
              'FieldValueInvalid',
              `spec.clusterIPs[${i}]`,
              r.reason === 'range'
                ? `failed to allocate IP ${want}: the provided IP (${want}) is not in the valid range. The range of valid IPs is ${alloc.range}`
                : `failed to allocate IP ${want}: provided IP is already allocated`,
              want,
            ),
          ]);
        a.undo.push(() => {
          alloc.release(want);
        });
        return;
      }
      const r = alloc.allocateNext();
      if (!r.ok)
        return a.fail([
          fieldCause(
            'FieldValueInvalid',
            `spec.clusterIPs[${i}]`,
            'failed to allocate a serviceIP: range is full',
            '',
          ),
        ]);
      ips[i] = r.ip;
      a.undo.push(() => {
        alloc.release(r.ip);
      });
      return;
    });
    s.clusterIPs = ips;
    s.clusterIP = ips[0] ?? '';
  }

  /**
   * Node ports: the requested ones first, then (unless a LoadBalancer has
   * allocateLoadBalancerNodePorts=false) one per remaining port, shared by protocol twins.
   */
  private allocateNodePorts(s: ServiceSpec, a: Allocation, allocateMissing: boolean): void {
    const portCause = (i: number, port: number, r: AllocateResult): StatusCause =>
      fieldCause(
        'FieldValueInvalid',
        `spec.ports[${i}].nodePort`,
        !r.ok && r.reason === 'range'
          ? `provided port is not in the valid range. The range of valid ports is ${this.nodePorts.range}`
          : 'provided port is already allocated',
        port,
      );
    const ports: ServicePort[] = s.ports ?? [];
    ports.forEach((p, i) => {
      if (p.nodePort === undefined) return;
      if (a.oldPorts.has(p.nodePort) || a.taken.has(p.nodePort)) {
        a.taken.add(p.nodePort);
        return;
      }
      const r = this.nodePorts.allocate(p.nodePort);
      if (!r.ok) a.fail([portCause(i, p.nodePort, r)]);
      const port = p.nodePort;
      a.taken.add(port);
      a.undo.push(() => {
        this.nodePorts.release(port);
      });
    });
    if (!allocateMissing) return;
    ports.forEach((p, i) => {
      if (p.nodePort !== undefined) return;
      // The same port number for another protocol of this Service shares its node port.
      const twin = ports.find((q) => q !== p && q.port === p.port && q.nodePort !== undefined);
      if (twin?.nodePort !== undefined) {
        p.nodePort = twin.nodePort;
        return;
      }
      const r = this.nodePorts.allocateNext();
      if (!r.ok) {
        a.fail([
          fieldCause(
            'FieldValueInvalid',
            `spec.ports[${i}].nodePort`,
            'failed to allocate a nodePort: range is full',
            0,
          ),
        ]);
        return;
      }
      p.nodePort = r.value;
      a.taken.add(r.value);
      a.undo.push(() => {
        this.nodePorts.release(r.value);
      });
    });
  }

  /** The health check node port of a LoadBalancer Service with externalTrafficPolicy Local. */
  private allocateHealthCheckNodePort(s: ServiceSpec, a: Allocation): void {
    const want = s.healthCheckNodePort;
    if (want !== undefined && want !== 0) {
      if (!a.oldPorts.has(want) && !a.taken.has(want)) {
        const r = this.nodePorts.allocate(want);
        if (!r.ok)
          a.fail([
            fieldCause(
              'FieldValueInvalid',
              'spec.healthCheckNodePort',
              r.reason === 'range'
                ? `failed to allocate requested HealthCheck NodePort ${want}: provided port is not in the valid range. The range of valid ports is ${this.nodePorts.range}`
                : `failed to allocate requested HealthCheck NodePort ${want}: provided port is already allocated`,
              want,
            ),
          ]);
        a.undo.push(() => {
          this.nodePorts.release(want);
        });
      }
      a.taken.add(want);
    } else {
      const r = this.nodePorts.allocateNext();
      if (!r.ok)
        return a.fail([
          fieldCause(
            'FieldValueInvalid',
            'spec.healthCheckNodePort',
            'failed to allocate a nodePort: range is full',
            0,
          ),
        ]);
      s.healthCheckNodePort = r.value;
      a.taken.add(r.value);
      a.undo.push(() => {
        this.nodePorts.release(r.value);
      });
    }
  }

  /** Releases the IPs and node ports an update dropped (re-reserved by the undo). */
  private releaseDropped(s: ServiceSpec, a: Allocation): void {
    const newIPs = new Set(s.type !== 'ExternalName' ? (s.clusterIPs ?? []) : []);
    for (const ip of a.oldIPs)
      if (!newIPs.has(ip)) {
        this.releaseIP(ip);
        a.undo.push(() => {
          this.reserveIP(ip);
        });
      }
    for (const port of a.oldPorts)
      if (!a.taken.has(port)) {
        this.nodePorts.release(port);
        a.undo.push(() => {
          this.nodePorts.allocate(port);
        });
      }
  }

  private releaseIP(ip: string): void {
    const fam = parseIPSloppy(ip)?.family;
    if (fam) this.allocatorFor(fam)?.release(ip);
  }

  private reserveIP(ip: string): void {
    const fam = parseIPSloppy(ip)?.family;
    if (fam) this.allocatorFor(fam)?.allocate(ip);
  }

  release(obj: StoredObject): void {
    const s = (obj as Service).spec ?? {};
    if (s.type !== 'ExternalName')
      for (const ip of s.clusterIPs ?? []) if (ip !== 'None') this.releaseIP(ip);
    for (const p of s.ports ?? []) if (p.nodePort !== undefined) this.nodePorts.release(p.nodePort);
    if (s.healthCheckNodePort !== undefined) this.nodePorts.release(s.healthCheckNodePort);
  }

  restore(obj: StoredObject): void {
    const s = clone((obj as Service).spec ?? {});
    if (s.type !== 'ExternalName')
      for (const ip of s.clusterIPs ?? []) if (ip !== 'None') this.reserveIP(ip);
    for (const p of s.ports ?? [])
      if (p.nodePort !== undefined) this.nodePorts.allocate(p.nodePort);
    if (s.healthCheckNodePort !== undefined) this.nodePorts.allocate(s.healthCheckNodePort);
  }
}
