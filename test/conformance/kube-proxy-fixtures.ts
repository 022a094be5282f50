// Shared loader for the kube-proxy fixture envelope (../shared/fixtures/kube-proxy): reads a
// fixture file and profiles.json, applies `proxier.overrides` (or a case's `overrides`) to
// the named profile, and maps the result onto our iptables or nftables proxier options. Steps and cases
// are typed loosely (they are data); suites interpret the actions they support. Fixture
// files are read in place, never copied.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EndpointSlice, Service } from '../../src/kube/types.js';
import type { IPFamily } from '../../src/util/ip.js';
import { DEFAULT_OPTIONS } from '../../src/proxy/iptables/options.js';
import type { IptablesProxierOptions, LocalDetector } from '../../src/proxy/iptables/options.js';
import { DEFAULT_NFTABLES_OPTIONS } from '../../src/proxy/nftables/options.js';
import type { NftablesProxierOptions } from '../../src/proxy/nftables/options.js';

/** One proxier construction profile from profiles.json, with overrides applied. */
export interface FixtureProfile {
  readonly backend: 'iptables' | 'nftables';
  readonly ipFamily: IPFamily;
  readonly nodeName: string;
  readonly nodeIP: string;
  readonly localDetector: { mode: string; cidr?: string };
  readonly serviceCIDRs?: string[];
  readonly nodePortAddresses: string[];
  readonly localhostNodePorts?: boolean;
  readonly masqueradeAll: boolean;
  readonly masqueradeMark: string;
  readonly iptablesHasRandomFully?: boolean;
  readonly nfacctCounters?: Record<string, boolean>;
  readonly conntrackTCPLiberal?: boolean;
  readonly interfaces: { name: string; addresses: string[] }[];
  readonly tracerLocalIPs: string[];
}

export type ObjectRef = { namespace: string; name: string };

/** A fixture step; `action` says which of the optional fields are present. */
export interface FixtureStep {
  readonly action: string;
  readonly comment?: string;
  readonly objects?: unknown[];
  readonly expectFailure?: boolean;
  readonly compare?: string;
  readonly checkConsistency?: boolean;
  readonly text?: string;
  readonly table?: string;
  readonly chain?: string;
  readonly rule?: string;
  readonly metric?: string;
  readonly labels?: Record<string, string>;
  readonly lastSync?: string;
  readonly total?: string;
  readonly value?: unknown;
  readonly delta?: number;
  readonly tests?: unknown[];
  /** nft steps: expectMapElement, expectLastTransactionOperations, (expect|age)StaleChains. */
  readonly map?: string;
  readonly key?: string[];
  readonly present?: boolean;
  readonly count?: number;
  readonly breakdown?: string;
  readonly seconds?: number;
  readonly chains?: string[];
}

export interface FixtureCase {
  readonly subtest: string;
  readonly overrides?: Record<string, unknown>;
  readonly expectChain?: { table: string; chain: string; text: string };
}

export interface Fixture {
  readonly file: string;
  readonly test: string;
  readonly subtest?: string;
  readonly backend: string;
  readonly description?: string;
  readonly proxier?: { profile: string; overrides?: Record<string, unknown> };
  readonly steps?: FixtureStep[];
  readonly cases?: FixtureCase[] | Record<string, string>;
  readonly facts?: unknown[];
  readonly vectors?: Record<string, unknown>[];
}

export function readJSON(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8')) as unknown;
}

/** Every `*.json` fixture of one backend folder, sorted by file name. */
export function loadFixtures(dir: string): Fixture[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ ...(readJSON(join(dir, f)) as Omit<Fixture, 'file'>), file: f }));
}

/** profiles.json → name → profile. */
export function loadProfiles(kubeProxyDir: string): Record<string, FixtureProfile> {
  const doc = readJSON(join(kubeProxyDir, 'profiles.json')) as {
    profiles: Record<string, FixtureProfile>;
  };
  return doc.profiles;
}

/** The profile a fixture names, with fixture-level then case-level overrides applied. */
export function resolveProfile(
  profiles: Record<string, FixtureProfile>,
  fixture: Fixture,
  caseOverrides?: Record<string, unknown>,
): FixtureProfile {
  const name = fixture.proxier?.profile;
  const base = name === undefined ? undefined : profiles[name];
  if (!base) throw new Error(`${fixture.file}: unknown proxier profile ${String(name)}`);
  return { ...base, ...fixture.proxier?.overrides, ...caseOverrides };
}

function detectorOf(p: FixtureProfile): LocalDetector {
  const d = p.localDetector;
  if ((d.mode === 'ClusterCIDR' || d.mode === 'NodeCIDR') && d.cidr !== undefined)
    return { mode: d.mode, cidr: d.cidr };
  return { mode: 'None' };
}

/** The options both modes take from a profile: the node, its detector and masquerading. */
function nodeOptions(p: FixtureProfile) {
  return {
    nodeName: p.nodeName,
    nodeIP: p.nodeIP,
    localDetector: detectorOf(p),
    masqueradeMark: p.masqueradeMark,
    masqueradeAll: p.masqueradeAll,
    nodePortAddresses: p.nodePortAddresses,
    localAddresses: p.interfaces.flatMap((i) => i.addresses),
  };
}

/** Maps a profile onto iptables proxier options (what NewFakeProxier sets). */
export function iptablesOptions(p: FixtureProfile): IptablesProxierOptions {
  const nfacct = p.nfacctCounters ?? {};
  return {
    ...DEFAULT_OPTIONS,
    ...nodeOptions(p),
    localhostNodePorts: p.localhostNodePorts ?? true,
    hasRandomFully: p.iptablesHasRandomFully ?? false,
    nfacct: {
      ctStateInvalidDropped: nfacct.ct_state_invalid_dropped_pkts === true,
      localhostNodePortsAccepted: nfacct.localhost_nps_accepted_pkts === true,
    },
    conntrackTCPLiberal: p.conntrackTCPLiberal ?? false,
  };
}

/** Maps a profile onto nftables proxier options (what the nftables NewFakeProxier sets). */
export function nftablesOptions(p: FixtureProfile): NftablesProxierOptions {
  return {
    ...DEFAULT_NFTABLES_OPTIONS,
    ...nodeOptions(p),
    serviceCIDRs: p.serviceCIDRs ?? [],
  };
}

export function asServices(step: FixtureStep): Service[] {
  return (step.objects ?? []) as Service[];
}

export function asEndpointSlices(step: FixtureStep): EndpointSlice[] {
  return (step.objects ?? []) as EndpointSlice[];
}

export function asRefs(step: FixtureStep): ObjectRef[] {
  return (step.objects ?? []) as ObjectRef[];
}
