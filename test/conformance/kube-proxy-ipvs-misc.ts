// Conformance: the host helpers of kube-proxy's IPVS daemon against
// ../shared/fixtures/kube-proxy/ipvs/misc-unit-vectors.json (TestGetNodeIPs,
// TestIpIsValidForSet, TestFilterCIDRs, Test_getFirstColumn). One case per vector; node IPs
// compare as sets, the others in order. Run by kube-proxy-ipvs.suite.ts.

import { join } from 'node:path';
import { filterCIDRs, firstColumn, isValidForSet, nodeIPsOf } from '../../src/proxy/ipvs/host.js';
import type { IPFamily } from '../../src/util/ip.js';
import type { CaseResult } from './harness.js';
import { readJSON } from './kube-proxy-fixtures.js';

export const MISC_VECTORS_FILE = 'misc-unit-vectors.json';

interface Group {
  readonly test: string;
  readonly vectors: readonly Record<string, unknown>[];
}

const familyOf = (isIPv6: unknown): IPFamily => (isIPv6 === true ? 'IPv6' : 'IPv4');

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join(' ') === [...b].sort().join(' ');
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Runs one vector: undefined when it passed, else what differed. */
function runVector(test: string, v: Record<string, unknown>): string | undefined {
  switch (test) {
    case 'TestGetNodeIPs': {
      const got = nodeIPsOf(v.deviceAddresses as Record<string, string[]>, familyOf(v.isIPv6));
      const want = v.expectNodeIPs as string[];
      return sameSet(got, want) ? undefined : `got [${got.join(', ')}], want [${want.join(', ')}]`;
    }
    case 'TestIpIsValidForSet': {
      const got = isValidForSet(String(v.ip), familyOf(v.isIPv6));
      return got === v.valid ? undefined : `got ${String(got)}, want ${String(v.valid)}`;
    }
    case 'TestFilterCIDRs': {
      const got = filterCIDRs(v.cidrs as string[], familyOf(v.wantIPv6));
      const want = v.expect as string[];
      return sameList(got, want) ? undefined : `got [${got.join(', ')}], want [${want.join(', ')}]`;
    }
    case 'Test_getFirstColumn': {
      const got = firstColumn(String(v.input));
      const want = v.expect as string[];
      return sameList(got, want) ? undefined : `got [${got.join(', ')}], want [${want.join(', ')}]`;
    }
    default:
      return `unknown test group ${test}`;
  }
}

function vectorName(test: string, v: Record<string, unknown>, i: number): string {
  const label =
    typeof v.case === 'number'
      ? `case ${v.case}`
      : typeof v.name === 'string'
        ? v.name
        : typeof v.ip === 'string'
          ? `${v.ip} (${familyOf(v.isIPv6)})`
          : `#${i}`;
  return `${MISC_VECTORS_FILE} ${test} ${label}`;
}

/** Every vector of misc-unit-vectors.json as one case. */
export function miscUnitCases(dir: string): CaseResult[] {
  const doc = readJSON(join(dir, MISC_VECTORS_FILE)) as { groups: Group[] };
  const out: CaseResult[] = [];
  for (const g of doc.groups)
    g.vectors.forEach((v, i) => {
      const name = vectorName(g.test, v, i);
      let problem: string | undefined;
      try {
        problem = runVector(g.test, v);
      } catch (e) {
        problem = (e as Error).message;
      }
      out.push(
        problem === undefined
          ? { name, status: 'passed' }
          : { name, status: 'failed', detail: problem },
      );
    });
  return out;
}
