// The name grammar of the cluster zone, apart from the lookups (as CoreDNS keeps
// plugin/kubernetes/parse.go apart from its handler): which labels of
// `[endpoint.|_port._proto.|<zone>.pin|prefer._zone.]service.namespace.svc|pod.<zone>` are the
// port, protocol, endpoint, cluster, topology zone, service, namespace and svc/pod. It does
// not look anything up and knows nothing of the index. Pure.

import { splitName } from './wire.js';

/** The parts of a name in the cluster zone; '' where the name has no such part. */
export interface Request {
  readonly port: string;
  readonly protocol: string;
  readonly endpoint: string;
  /** MCS source cluster (`endpoint.cluster.service.namespace.svc.<clusterset zone>`). */
  readonly cluster: string;
  /** CoreDNS 1.14 `zonal`: the topology zone of `<zone>.pin|prefer._zone.` names. */
  readonly topologyZone: string;
  /** `prefer` (fall back to every zone) rather than `pin`. */
  readonly zonePrefer: boolean;
  readonly service: string;
  readonly namespace: string;
  /** `svc` or `pod`; '' for the zone apex and for `svc.<zone>` / `pod.<zone>` themselves. */
  readonly podOrSvc: string;
}

export interface ParseRequestOptions {
  /** The zone is a `multicluster` zone: two labels before the service are endpoint.cluster. */
  readonly multicluster: boolean;
  /** Accept `<zone>.pin|prefer._zone.` names (CoreDNS `zonal`). */
  readonly zonal: boolean;
}

/** A name with no parts: the zone apex, `svc.<zone>` and `pod.<zone>`. */
export const EMPTY_REQUEST: Request = {
  port: '',
  protocol: '',
  endpoint: '',
  cluster: '',
  topologyZone: '',
  zonePrefer: false,
  service: '',
  namespace: '',
  podOrSvc: '',
};

/** `lname` without `.zone` (both lower case); '' for the zone itself. */
export function stripZone(lname: string, zone: string): string {
  return lname === zone ? '' : lname.slice(0, lname.length - zone.length - 1);
}

function stripUnderscore(s: string): string {
  return s.startsWith('_') ? s.slice(1) : s;
}

/**
 * CoreDNS parseRequest: splits a lower-case name in `zone` into its parts, reading the
 * labels right to left. Undefined is CoreDNS's errInvalidRequest (the resolver answers
 * NXDOMAIN): a last label other than svc/pod, or more labels than the grammar allows.
 */
export function parseRequest(
  lname: string,
  zone: string,
  opts: ParseRequestOptions,
): Request | undefined {
  const base = stripZone(lname, zone);
  if (base === '' || base === 'svc' || base === 'pod') return EMPTY_REQUEST;
  const segs = splitName(base);
  let last = segs.length - 1;
  const podOrSvc = segs[last] ?? '';
  if (podOrSvc !== 'pod' && podOrSvc !== 'svc') return undefined;
  const r = { ...EMPTY_REQUEST, podOrSvc };
  last--;
  if (last < 0) return r;
  r.namespace = segs[last] ?? '';
  last--;
  if (last < 0) return r;
  r.service = segs[last] ?? '';
  last--;
  if (last < 0) return r;
  if (last === 0) {
    r.endpoint = segs[0] ?? '';
  } else if (last === 1) {
    const a = segs[1] ?? '';
    const b = segs[0] ?? '';
    if (!opts.multicluster || a.startsWith('_') || b.startsWith('_')) {
      r.protocol = stripUnderscore(a);
      r.port = stripUnderscore(b);
    } else {
      r.cluster = a;
      r.endpoint = b;
    }
  } else {
    if (!opts.zonal || opts.multicluster || segs[last] !== '_zone' || r.podOrSvc !== 'svc')
      return undefined;
    const directive = segs[last - 1];
    if (directive === 'prefer') r.zonePrefer = true;
    else if (directive !== 'pin') return undefined;
    r.topologyZone = segs.slice(0, last - 1).join('.');
  }
  return r;
}
