// The hash in kube-proxy's object names, shared by both dataplanes: the first characters of
// RFC 4648 base32(SHA-256(s)) — 16 in the iptables mode's KUBE-SVC-/KUBE-SEP- chains, 8 in
// the nftables mode's `service-…`/`endpoint-…` names. Pure.

import { hash } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 of 40 bits given as 10 hex digits: 8 characters. */
function base32Of40Bits(hex10: string): string {
  let v = Number.parseInt(hex10, 16);
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = (BASE32[v % 32] ?? '') + out;
    v = Math.floor(v / 32);
  }
  return out;
}

/**
 * First 16 RFC 4648 base32 characters of SHA-256(s): exactly the first 80 bits, taken from
 * the hex digest (the one-shot crypto.hash is several times faster than createHash, and
 * this runs once per endpoint on a cold sync).
 */
export function hash16(s: string): string {
  const hex = hash('sha256', s, 'hex');
  return base32Of40Bits(hex.slice(0, 10)) + base32Of40Bits(hex.slice(10, 20));
}
