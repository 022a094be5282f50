// The typed `IpOp`s a CNI ADD or DEL needs (util/ip-ops.ts), sent to the kernel as rtnetlink
// requests from this process instead of through an `ip -batch` process: a veth pair with its
// peer created straight in the Pod's namespace, links up/down, mtu and master, addresses
// and routes added, replaced or deleted, links deleted. Each request asks for an ACK and
// the next is sent only after it, so a batch stops at the first failure like `ip -batch`,
// and a failure reads as iproute2's does ("RTNETLINK answers: File exists", `Cannot find
// device "X"`). Defaults follow iproute2 (ip/iproute.c, ip/ipaddress.c): routes in the main
// table with protocol boot, scope link for an IPv4 route without a gateway, scope nowhere
// for deletes; addresses of scope global with IFA_LOCAL = IFA_ADDRESS. `encodeOp` returns
// undefined for anything else (bridge or VXLAN creation, hairpin, neighbours, multipath):
// the caller (ip-netlink.ts) runs such batches through `ip` instead. The socket is made
// inside the namespace it configures (a socket keeps the namespace it was created in), so
// the whole batch is synchronous: each request is a send and a recv of a few hundred bytes.

import { closeSync, openSync } from 'node:fs';
import { parseIP, type IPFamily, type ParsedIP } from '../util/ip.js';
import type { IpOp } from '../util/ip-ops.js';
import { SOCK, type Libc } from './libc.js';

// <linux/netlink.h>, <linux/rtnetlink.h>, <linux/if_link.h>, <linux/if_addr.h>, <linux/veth.h>
const NETLINK_ROUTE = 0;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const NLM_F_REPLACE = 0x100;
const NLM_F_EXCL = 0x200;
const NLM_F_CREATE = 0x400;
const NLMSG_ERROR = 2;
const RTM_NEWLINK = 16;
const RTM_DELLINK = 17;
const RTM_NEWADDR = 20;
const RTM_DELADDR = 21;
const RTM_NEWROUTE = 24;
const RTM_DELROUTE = 25;
const IFLA_ADDRESS = 1;
const IFLA_IFNAME = 3;
const IFLA_MTU = 4;
const IFLA_MASTER = 10;
const IFLA_LINKINFO = 18;
const IFLA_NET_NS_FD = 28;
const IFLA_INFO_KIND = 1;
const IFLA_INFO_DATA = 2;
const VETH_INFO_PEER = 1;
const IFF_UP = 0x1;
const IFA_ADDRESS = 1;
const IFA_LOCAL = 2;
const IFA_FLAGS = 8;
const IFA_F_NODAD = 0x02;
const IFA_F_NOPREFIXROUTE = 0x200;
const RTA_DST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
const RTA_PREFSRC = 7;
const RT_TABLE_MAIN = 254;
const RTPROT_BOOT = 3;
const RT_SCOPE_UNIVERSE = 0;
const RT_SCOPE_LINK = 253;
const RT_SCOPE_HOST = 254;
const RT_SCOPE_NOWHERE = 255;
const RTN_UNICAST = 1;
const RTNH_F_ONLINK = 4;

/** strerror() of the errnos rtnetlink answers with, as iproute2 prints them. */
const STRERROR: Readonly<Record<number, string>> = {
  1: 'Operation not permitted',
  2: 'No such file or directory',
  3: 'No such process',
  13: 'Permission denied',
  12: 'Cannot allocate memory',
  16: 'Device or resource busy',
  17: 'File exists',
  19: 'No such device',
  22: 'Invalid argument',
  34: 'Numerical result out of range',
  95: 'Operation not supported',
  97: 'Address family not supported by protocol',
  99: 'Cannot assign requested address',
  100: 'Network is down',
  101: 'Network is unreachable',
  105: 'No buffer space available',
  113: 'No route to host',
};

/** A failed op: the text iproute2 would print for it. */
export class NetlinkOpError extends Error {
  readonly errno: number;
  constructor(message: string, errno: number) {
    super(message);
    this.name = 'NetlinkOpError';
    this.errno = errno;
  }
}

function attr(type: number, payload: Uint8Array): Buffer {
  const len = 4 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  out.set(payload, 4);
  return out;
}

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
};
const cstr = (s: string): Buffer => Buffer.from(`${s}\0`, 'latin1');
const nested = (type: number, parts: readonly Uint8Array[]): Buffer =>
  attr(type, Buffer.concat(parts));

function macBytes(mac: string): Buffer {
  const parts = mac.split(':');
  if (parts.length !== 6 || parts.some((p) => !/^[0-9a-fA-F]{1,2}$/.test(p)))
    throw new NetlinkOpError(`"${mac}" is invalid lladdr.`, 22);
  return Buffer.from(parts.map((p) => parseInt(p, 16)));
}

function ipBytes(ip: ParsedIP): Buffer {
  const n = ip.family === 'IPv4' ? 4 : 16;
  const out = Buffer.alloc(n);
  let v = ip.value;
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

const familyCode = (f: IPFamily): number => (f === 'IPv4' ? SOCK.AF_INET : SOCK.AF_INET6);

/** `ip[/prefix]` → address and prefix (a bare address is a host prefix). */
function addrAndPrefix(text: string): { ip: ParsedIP; prefix: number } {
  const [a = '', p] = text.split('/');
  const ip = parseIP(a);
  if (ip === undefined)
    throw new NetlinkOpError(`Error: any valid prefix is expected rather than "${text}".`, 22);
  const bits = ip.family === 'IPv4' ? 32 : 128;
  const prefix = p === undefined ? bits : Number(p);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits)
    throw new NetlinkOpError(`Error: any valid prefix is expected rather than "${text}".`, 22);
  return { ip, prefix };
}

function ifinfomsg(index: number, flags: number, change: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeInt32LE(index, 4);
  b.writeUInt32LE(flags, 8);
  b.writeUInt32LE(change, 12);
  return b;
}

/** What encoding an op needs from the namespace it runs in. */
export interface OpContext {
  /** The device's index; throws `Cannot find device "X"` when it has none. */
  index(dev: string): number;
  /** An open fd of a namespace given by path or /run/netns name (closed after the batch). */
  netnsFd(netns: string): number;
}

/** One rtnetlink request: message type, flags and body (everything after the header). */
export interface NlRequest {
  readonly type: number;
  readonly flags: number;
  readonly body: Buffer;
}

/** Whether `encodeOp` can express the op (else the batch goes to `ip`). */
export function netlinkSupports(op: IpOp): boolean {
  switch (op.op) {
    case 'linkAdd':
      return op.kind === 'veth';
    case 'linkSet':
      return op.hairpin === undefined && op.isolated === undefined && op.promisc === undefined;
    case 'linkDel':
    case 'addrAdd':
    case 'addrReplace':
    case 'addrDel':
      return true;
    case 'routeAdd':
    case 'routeReplace':
    case 'routeDel':
      return op.nexthops === undefined;
    default:
      return false;
  }
}

function linkAttrs(o: { mtu?: number | undefined; address?: string | undefined }): Buffer[] {
  const out: Buffer[] = [];
  if (o.mtu !== undefined) out.push(attr(IFLA_MTU, u32(o.mtu)));
  if (o.address !== undefined) out.push(attr(IFLA_ADDRESS, macBytes(o.address)));
  return out;
}

/** The request for one op (netlinkSupports(op) must hold). */
export function encodeOp(op: IpOp, ctx: OpContext): NlRequest {
  const create = NLM_F_CREATE | NLM_F_EXCL;
  switch (op.op) {
    case 'linkAdd': {
      if (op.kind !== 'veth') throw new Error(`netlink: link kind ${op.kind} is not supported`);
      const peer = [
        ifinfomsg(0, 0, 0),
        attr(IFLA_IFNAME, cstr(op.peer.name)),
        ...linkAttrs(op.peer),
      ];
      if (op.peer.netns !== undefined)
        peer.push(attr(IFLA_NET_NS_FD, u32(ctx.netnsFd(op.peer.netns))));
      const body = Buffer.concat([
        ifinfomsg(0, 0, 0),
        attr(IFLA_IFNAME, cstr(op.name)),
        ...linkAttrs(op),
        nested(IFLA_LINKINFO, [
          attr(IFLA_INFO_KIND, cstr('veth')),
          nested(IFLA_INFO_DATA, [nested(VETH_INFO_PEER, peer)]),
        ]),
      ]);
      return { type: RTM_NEWLINK, flags: create, body };
    }
    case 'linkSet': {
      const index = ctx.index(op.dev);
      const up = op.up === undefined ? 0 : op.up ? IFF_UP : 0;
      const parts: Buffer[] = [ifinfomsg(index, up, op.up === undefined ? 0 : IFF_UP)];
      if (op.mtu !== undefined) parts.push(attr(IFLA_MTU, u32(op.mtu)));
      if (op.master !== undefined)
        parts.push(attr(IFLA_MASTER, u32(op.master === null ? 0 : ctx.index(op.master))));
      return { type: RTM_NEWLINK, flags: 0, body: Buffer.concat(parts) };
    }
    case 'linkDel':
      return { type: RTM_DELLINK, flags: 0, body: ifinfomsg(ctx.index(op.dev), 0, 0) };
    case 'addrAdd':
    case 'addrReplace':
    case 'addrDel': {
      const { ip, prefix } = addrAndPrefix(op.cidr);
      const index = ctx.index(op.dev);
      const flags =
        (op.nodad === true ? IFA_F_NODAD : 0) |
        (op.noprefixroute === true ? IFA_F_NOPREFIXROUTE : 0);
      const head = Buffer.alloc(8);
      head.writeUInt8(familyCode(ip.family), 0);
      head.writeUInt8(prefix, 1);
      head.writeUInt8(flags & 0xff, 2);
      head.writeUInt8(RT_SCOPE_UNIVERSE, 3);
      head.writeUInt32LE(index, 4);
      const bytes = ipBytes(ip);
      const parts: Buffer[] = [head, attr(IFA_LOCAL, bytes), attr(IFA_ADDRESS, bytes)];
      if (flags !== 0) parts.push(attr(IFA_FLAGS, u32(flags)));
      const type = op.op === 'addrDel' ? RTM_DELADDR : RTM_NEWADDR;
      const f =
        op.op === 'addrAdd' ? create : op.op === 'addrReplace' ? NLM_F_CREATE | NLM_F_REPLACE : 0;
      return { type, flags: f, body: Buffer.concat(parts) };
    }
    case 'routeAdd':
    case 'routeReplace':
    case 'routeDel':
      return encodeRoute(op, ctx);
    default:
      throw new Error(`netlink: op ${op.op} is not supported`);
  }
}

function encodeRoute(
  op: Extract<IpOp, { op: 'routeAdd' | 'routeReplace' | 'routeDel' }>,
  ctx: OpContext,
): NlRequest {
  const gw = op.via === undefined ? undefined : parseIP(op.via);
  if (op.via !== undefined && gw === undefined)
    throw new NetlinkOpError(`Error: inet address is expected rather than "${op.via}".`, 22);
  let family: IPFamily;
  let dst: { ip: ParsedIP; prefix: number } | undefined;
  if (op.dst === 'default')
    family = gw?.family ?? (op.src !== undefined ? (parseIP(op.src)?.family ?? 'IPv4') : 'IPv4');
  else {
    dst = addrAndPrefix(op.dst);
    family = dst.ip.family;
  }
  const del = op.op === 'routeDel';
  const scope =
    op.scope === 'link'
      ? RT_SCOPE_LINK
      : op.scope === 'host'
        ? RT_SCOPE_HOST
        : family === 'IPv6'
          ? RT_SCOPE_UNIVERSE
          : del
            ? RT_SCOPE_NOWHERE
            : gw === undefined
              ? RT_SCOPE_LINK
              : RT_SCOPE_UNIVERSE;
  const head = Buffer.alloc(12);
  head.writeUInt8(familyCode(family), 0);
  head.writeUInt8(dst?.prefix ?? 0, 1);
  head.writeUInt8(RT_TABLE_MAIN, 4);
  head.writeUInt8(del ? 0 : RTPROT_BOOT, 5);
  head.writeUInt8(scope, 6);
  head.writeUInt8(del ? 0 : RTN_UNICAST, 7);
  head.writeUInt32LE(op.onlink === true ? RTNH_F_ONLINK : 0, 8);
  const parts: Buffer[] = [head];
  if (dst !== undefined) parts.push(attr(RTA_DST, ipBytes(dst.ip)));
  if (gw !== undefined) parts.push(attr(RTA_GATEWAY, ipBytes(gw)));
  if (op.dev !== undefined) parts.push(attr(RTA_OIF, u32(ctx.index(op.dev))));
  if (op.src !== undefined) {
    const src = parseIP(op.src);
    if (src === undefined)
      throw new NetlinkOpError(`Error: inet address is expected rather than "${op.src}".`, 22);
    parts.push(attr(RTA_PREFSRC, ipBytes(src)));
  }
  const flags =
    op.op === 'routeAdd'
      ? NLM_F_CREATE | NLM_F_EXCL
      : op.op === 'routeReplace'
        ? NLM_F_CREATE | NLM_F_REPLACE
        : 0;
  return { type: del ? RTM_DELROUTE : RTM_NEWROUTE, flags, body: Buffer.concat(parts) };
}

/** An rtnetlink socket of the namespace the calling thread is in when it is opened. */
export class RtnetlinkSocket {
  private readonly libc: Libc;
  private readonly fd: number;
  private seq = Math.floor(Math.random() * 0x7fffffff);
  private readonly rx = Buffer.alloc(65536);

  constructor(libc: Libc) {
    this.libc = libc;
    this.fd = libc.socket(SOCK.AF_NETLINK, SOCK.RAW | SOCK.CLOEXEC, NETLINK_ROUTE);
    if (this.fd < 0) throw new Error(`netlink socket: errno ${String(libc.errno())}`);
  }

  /** The device's index in this socket's namespace (the calling thread must be in it too). */
  index(dev: string): number {
    const i = this.libc.if_nametoindex(dev);
    if (i === 0) throw new NetlinkOpError(`Cannot find device "${dev}"`, 19);
    return i;
  }

  /** Sends one request and waits for its ACK; throws NetlinkOpError with iproute2's text. */
  request(req: NlRequest): void {
    const seq = ++this.seq;
    const msg = Buffer.alloc(16 + req.body.length);
    msg.writeUInt32LE(msg.length, 0);
    msg.writeUInt16LE(req.type, 4);
    msg.writeUInt16LE(NLM_F_REQUEST | NLM_F_ACK | req.flags, 6);
    msg.writeUInt32LE(seq, 8);
    req.body.copy(msg, 16);
    if (this.libc.send(this.fd, msg, msg.length, 0) !== msg.length)
      throw new Error(`netlink send: errno ${String(this.libc.errno())}`);
    for (;;) {
      const n = this.libc.recv(this.fd, this.rx, this.rx.length, 0);
      if (n < 0) throw new Error(`netlink recv: errno ${String(this.libc.errno())}`);
      for (let off = 0; off + 16 <= n;) {
        const len = this.rx.readUInt32LE(off);
        const type = this.rx.readUInt16LE(off + 4);
        const mseq = this.rx.readUInt32LE(off + 8);
        if (len < 16) break;
        if (type === NLMSG_ERROR && mseq === seq) {
          const err = -this.rx.readInt32LE(off + 16);
          if (err === 0) return;
          throw new NetlinkOpError(
            `RTNETLINK answers: ${STRERROR[err] ?? `errno ${String(err)}`}`,
            err,
          );
        }
        off += (len + 3) & ~3;
      }
    }
  }

  close(): void {
    this.libc.close(this.fd);
  }
}

/** Opens namespace fds by path or /run/netns name for IFLA_NET_NS_FD; closes them all at the end. */
export class NetnsFds {
  private readonly fds = new Map<string, number>();

  get(netns: string): number {
    const path = netns.includes('/') ? netns : `/run/netns/${netns}`;
    let fd = this.fds.get(path);
    if (fd === undefined) {
      try {
        fd = openSync(path, 'r');
      } catch {
        throw new NetlinkOpError(`Invalid "netns" value "${netns}"`, 2);
      }
      this.fds.set(path, fd);
    }
    return fd;
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}
