// Host facts of kube-proxy's IPVS mode, decided from data the daemon read: which local
// addresses count for a family (loopback and IPv6 link-local never; an IPv4-mapped IPv6
// address counts as IPv4), the node IPs the NodePort virtual servers listen on when
// nodePortAddresses is unset (every device's addresses of the family minus those bound to
// kube-ipvs0, which are Service IPs, not node addresses), `ipvs.excludeCIDRs` split per family
// for the two single-stack proxiers of a dual-stack node, and the module names of
// /proc/modules. Pure: the readers live in host-setup.ts. Vectors: kube-proxy's
// proxier_test.go TestGetNodeIPs, TestIpIsValidForSet, TestFilterCIDRs, Test_getFirstColumn
// (fixtures ipvs/misc-unit-vectors.json).

import { formatIP, isLoopback, parseCIDRSloppy, parseIPSloppy } from '../../util/ip.js';
import type { IPFamily, ParsedIP } from '../../util/ip.js';
import { IPVS_DUMMY_DEVICE } from './names.js';

const MAPPED_V4_PREFIX = 0xffffn;

/** `::ffff:a.b.c.d` read as the IPv4 address it carries; anything else unchanged. */
function unmapIPv4(ip: ParsedIP): ParsedIP {
  if (ip.family === 'IPv6' && ip.value >> 32n === MAPPED_V4_PREFIX)
    return { family: 'IPv4', value: ip.value & 0xffffffffn };
  return ip;
}

function isIPv6LinkLocal(ip: ParsedIP): boolean {
  // fe80::/10
  return ip.family === 'IPv6' && ip.value >> 118n === 0x3fan;
}

/**
 * The canonical text of `text` when it is a local address usable for `family` (kube-proxy's
 * ipIsValidForSet), else undefined: the family matches (IPv4-mapped IPv6 counts as IPv4),
 * and it is neither loopback nor IPv6 link-local. IPv4 link-local (169.254/16) is valid.
 */
export function localAddressForSet(text: string, family: IPFamily): string | undefined {
  const parsed = parseIPSloppy(text.split('/')[0] ?? '');
  if (parsed === undefined) return undefined;
  const ip = unmapIPv4(parsed);
  if (ip.family !== family || isLoopback(ip) || isIPv6LinkLocal(ip)) return undefined;
  return formatIP(ip);
}

/** Whether `text` counts as a local address for `family` (see localAddressForSet). */
export function isValidForSet(text: string, family: IPFamily): boolean {
  return localAddressForSet(text, family) !== undefined;
}

/**
 * kube-proxy's node IPs for `family`: the valid local addresses (localAddressForSet) of every
 * device, minus every address bound to kube-ipvs0. Addresses may carry a `/prefix`. Each
 * appears once, in device order.
 */
export function nodeIPsOf(
  deviceAddresses: Readonly<Record<string, readonly string[]>>,
  family: IPFamily,
): string[] {
  const serviceIPs = new Set(
    (deviceAddresses[IPVS_DUMMY_DEVICE] ?? []).map((a) => localAddressForSet(a, family)),
  );
  const out: string[] = [];
  for (const [device, addrs] of Object.entries(deviceAddresses)) {
    if (device === IPVS_DUMMY_DEVICE) continue;
    for (const a of addrs) {
      const ip = localAddressForSet(a, family);
      if (ip !== undefined && !serviceIPs.has(ip) && !out.includes(ip)) out.push(ip);
    }
  }
  return out;
}

/** The CIDRs of `family`, in their order (unparseable entries are dropped). */
export function filterCIDRs(cidrs: readonly string[], family: IPFamily): string[] {
  return cidrs.filter((c) => parseCIDRSloppy(c)?.family === family);
}

/** The first whitespace-separated word of every non-empty line (/proc/modules: module names). */
export function firstColumn(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const word = line.trim().split(/\s+/)[0] ?? '';
    if (word !== '') out.push(word);
  }
  return out;
}
