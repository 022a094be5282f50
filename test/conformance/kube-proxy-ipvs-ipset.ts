// Conformance: kube-proxy's ipset helpers against
// ../shared/fixtures/kube-proxy/ipvs/ipset-vectors.json. TestCheckIPSetVersion runs each
// version through the >= 6.0 gate (netfilter/ipset/version.ts). TestSyncIPSetEntries runs
// each set through the IPVS proxier's ipset sync (proxy/ipvs/kernel-diff.ts ipsetDiffOps)
// over the proxier's kernel seam with a FakeIpset holding the vector's current entries, both
// ways the proxier syncs: a full sync diffs against the entries the kernel lists, a partial
// one against what the last sync applied. The entries are opaque strings here (some upstream
// values are not ipset syntax), so the Fake does not validate them. One case per vector.
// Run by kube-proxy-ipvs.suite.ts.

import { join } from 'node:path';
import { FakeIptables } from '../../src/netfilter/iptables/fake.js';
import { FakeIpset } from '../../src/netfilter/ipset/fake.js';
import { defaultIpsetOptions, isIpsetType } from '../../src/netfilter/ipset/model.js';
import { isValidIpsetVersion } from '../../src/netfilter/ipset/version.js';
import { FakeIpvs } from '../../src/netfilter/ipvs/fake.js';
import { FakeIpvsKernel } from '../../src/proxy/ipvs/kernel.js';
import { ipsetContents, ipsetDiffOps } from '../../src/proxy/ipvs/kernel-diff.js';
import type { IpsetPlan } from '../../src/proxy/ipvs/plan.js';
import type { IPFamily } from '../../src/util/ip.js';
import type { CaseResult } from './harness.js';
import { readJSON } from './kube-proxy-fixtures.js';

export const IPSET_VECTORS_FILE = 'ipset-vectors.json';

interface VersionVector {
  readonly subtest: string;
  readonly version: string;
  readonly valid: boolean;
}

interface SyncVector {
  readonly subtest: string;
  readonly set: string;
  readonly type: string;
  readonly ipv6: boolean;
  readonly activeEntries: readonly string[];
  readonly currentEntries: readonly string[];
  readonly expectedEntries: readonly string[];
}

type Group =
  | { readonly test: 'TestCheckIPSetVersion'; readonly vectors: readonly VersionVector[] }
  | { readonly test: 'TestSyncIPSetEntries'; readonly vectors: readonly SyncVector[] };

function versionCase(v: VersionVector): string | undefined {
  const got = isValidIpsetVersion(v.version);
  return got === v.valid ? undefined : `valid ${String(got)}, want ${String(v.valid)}`;
}

/** The vector's set as the planner would hand it to the sync, holding `entries`. */
function planOf(v: SyncVector, entries: readonly string[]): IpsetPlan {
  if (!isIpsetType(v.type)) throw new Error(`unsupported set type ${v.type}`);
  return {
    name: v.set,
    base: v.set,
    comment: '',
    type: v.type,
    ...(v.type === 'bitmap:port' ? {} : { family: v.ipv6 ? 'inet6' : 'inet' }),
    options: defaultIpsetOptions(v.type),
    entries: entries.map((value) => ({ value })),
  };
}

/** One sync of the vector's set over a kernel holding its current entries: what differs. */
async function syncCase(v: SyncVector, fullSync: boolean): Promise<string | undefined> {
  const family: IPFamily = v.ipv6 ? 'IPv6' : 'IPv4';
  const ipset = new FakeIpset({ validateEntries: false });
  const kernel = new FakeIpvsKernel(family, new FakeIpvs(), ipset, new FakeIptables(family));
  const current = planOf(v, v.currentEntries);
  ipset.run([{ verb: 'create', set: current }]);
  const have = fullSync ? await kernel.readIpsets() : ipsetContents([current]);
  await kernel.applyIpsets(ipsetDiffOps([planOf(v, v.activeEntries)], have, fullSync));
  const got = ipset.entries(v.set).join(' ');
  const want = [...v.expectedEntries].sort().join(' ');
  return got === want
    ? undefined
    : `${fullSync ? 'full' : 'partial'} sync: [${got}], want [${want}]`;
}

/** One case: passed, or failed with what differed (or what was thrown). */
async function caseOf(
  test: string,
  subtest: string,
  run: () => Promise<string | undefined>,
): Promise<CaseResult> {
  const name = `${IPSET_VECTORS_FILE} ${test} ${subtest}`;
  let problem: string | undefined;
  try {
    problem = await run();
  } catch (e) {
    problem = (e as Error).message;
  }
  return problem === undefined
    ? { name, status: 'passed' }
    : { name, status: 'failed', detail: problem };
}

/** Every vector of ipset-vectors.json as one case. */
export async function ipsetVectorCases(dir: string): Promise<CaseResult[]> {
  const doc = readJSON(join(dir, IPSET_VECTORS_FILE)) as { groups: readonly Group[] };
  const out: CaseResult[] = [];
  for (const g of doc.groups) {
    switch (g.test) {
      case 'TestCheckIPSetVersion':
        for (const v of g.vectors)
          out.push(await caseOf(g.test, v.subtest, () => Promise.resolve(versionCase(v))));
        break;
      case 'TestSyncIPSetEntries':
        for (const v of g.vectors)
          out.push(
            await caseOf(
              g.test,
              v.subtest,
              async () => (await syncCase(v, true)) ?? (await syncCase(v, false)),
            ),
          );
        break;
      default: {
        const test = String((g as { test: unknown }).test);
        out.push({
          name: `${IPSET_VECTORS_FILE} ${test}`,
          status: 'failed',
          detail: 'unknown group',
        });
      }
    }
  }
  return out;
}
