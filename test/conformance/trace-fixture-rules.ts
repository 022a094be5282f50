// Rules for a kube-proxy fixture's flow step when the fixture carries no rule text: the
// fixture's Services and EndpointSlices rendered through svcnet's iptables renderer
// (src/proxy/iptables/plan.ts, one full sync) with the fixture's proxier profile, as the
// iptables-restore text kube-proxy would apply.

import type { EndpointSlice } from '../../src/kube/types.js';
import { renderDocument } from '../../src/netfilter/iptables/render.js';
import { planIptables } from '../../src/proxy/iptables/plan.js';
import {
  DEFAULT_OPTIONS,
  type IptablesProxierOptions,
  type LocalDetector,
} from '../../src/proxy/iptables/options.js';
import { EndpointsChangeTracker } from '../../src/proxy/model/endpoints-change-tracker.js';
import { ServiceChangeTracker } from '../../src/proxy/model/service-change-tracker.js';
import { takeSnapshot } from '../../src/proxy/model/snapshot.js';

/** A proxier profile from ../shared/fixtures/kube-proxy/profiles.json (with overrides applied). */
export interface Profile {
  readonly ipFamily: 'IPv4' | 'IPv6';
  readonly nodeName: string;
  readonly nodeIP: string;
  readonly tracerLocalIPs: readonly string[];
  readonly localDetector?: { readonly mode: string; readonly cidr?: string };
  readonly masqueradeMark?: string;
  readonly masqueradeAll?: boolean;
  readonly nodePortAddresses?: readonly string[];
  readonly localhostNodePorts?: boolean;
  readonly iptablesHasRandomFully?: boolean;
  readonly nfacctCounters?: Readonly<Record<string, boolean>>;
  readonly conntrackTCPLiberal?: boolean;
  readonly interfaces?: readonly { readonly name: string; readonly addresses: readonly string[] }[];
  readonly [key: string]: unknown;
}

export interface FixtureObjects {
  readonly services: readonly Record<string, unknown>[];
  readonly endpointSlices: readonly Record<string, unknown>[];
}

function detectorOf(p: Profile): LocalDetector {
  const d = p.localDetector;
  if (!d || d.mode === 'None' || d.cidr === undefined) return { mode: 'None' };
  if (d.mode === 'ClusterCIDR' || d.mode === 'NodeCIDR') return { mode: d.mode, cidr: d.cidr };
  return { mode: 'None' };
}

/** The proxier options a fixture profile describes. */
export function optionsOfProfile(p: Profile): IptablesProxierOptions {
  return {
    ...DEFAULT_OPTIONS,
    nodeName: p.nodeName,
    nodeIP: p.nodeIP,
    localDetector: detectorOf(p),
    masqueradeMark: p.masqueradeMark ?? '0x4000',
    masqueradeAll: p.masqueradeAll ?? false,
    nodePortAddresses: p.nodePortAddresses ?? [],
    localAddresses: (p.interfaces ?? []).flatMap((i) => i.addresses),
    localhostNodePorts: p.localhostNodePorts ?? true,
    hasRandomFully: p.iptablesHasRandomFully ?? false,
    nfacct: {
      ctStateInvalidDropped: p.nfacctCounters?.ct_state_invalid_dropped_pkts ?? false,
      localhostNodePortsAccepted: p.nfacctCounters?.localhost_nps_accepted_pkts ?? false,
    },
    conntrackTCPLiberal: p.conntrackTCPLiberal ?? false,
  };
}

/** The iptables-restore text our renderer produces for the objects, or why there is none. */
export function renderFixtureRules(
  objects: FixtureObjects,
  profile: Profile,
): { text: string } | { unavailable: string } {
  const services = new ServiceChangeTracker(profile.ipFamily);
  const endpoints = new EndpointsChangeTracker(profile.ipFamily, profile.nodeName);
  for (const s of objects.services) services.update(undefined, s);
  for (const e of objects.endpointSlices)
    endpoints.update(undefined, e as unknown as EndpointSlice);
  const snap = takeSnapshot(services, endpoints);
  const plan = planIptables({
    family: profile.ipFamily,
    services: snap.services,
    endpoints: snap.endpoints,
    options: optionsOfProfile(profile),
  });
  return { text: renderDocument(plan.document) };
}
