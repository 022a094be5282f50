// The in-process rtnetlink path (os/ip-netlink.ts) against `ip` itself: a ptp Pod attachment
// (veth with its peer made in the Pod's namespace, MACs and MTU, /32 gateway, host route,
// Pod address without prefix route, link and default routes; IPv4 and IPv6) applied once
// through NetlinkIp and once through RealIp, each into a fresh node + Pod namespace pair,
// must leave the same links, addresses and routes as `ip -j` reports them; failures must
// read as iproute2's; a DEL-like batch must remove what ADD made. Every op runs in a
// namespace this test made (never the test's own). Needs root and ip.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NetnsLab, netnsPath } from './lib/cni-lab.js';
import { missingToolsReason, skipOrFail } from './lib/prereq.js';
import { RealExecer } from '../../src/os/exec.js';
import { IpError, RealIp, type Ip } from '../../src/os/ip.js';
import { NetlinkIp } from '../../src/os/ip-netlink.js';
import {
  addrAdd,
  addrReplace,
  linkDel,
  linkSet,
  linkUp,
  routeAdd,
  routeDel,
  routeReplace,
  vethPair,
  type IpOp,
} from '../../src/util/ip-ops.js';

const skip = skipOrFail(process.getuid?.() !== 0 ? 'needs root' : missingToolsReason(['ip']));

/** A ptp attachment's ops, as cni/plan-link.ts plans them, for one Pod in `pod`. */
function ptpOps(pod: string): { host: IpOp[]; pod: IpOp[] } {
  return {
    host: [
      vethPair({
        host: 'veth1a2b3c4d',
        peer: 'eth0',
        mtu: 1450,
        hostMac: '0a:58:0a:f4:01:01',
        peerMac: '0a:58:0a:f4:01:05',
        netns: pod,
      }),
      linkUp('veth1a2b3c4d'),
      addrReplace('10.244.1.1/32', 'veth1a2b3c4d'),
      addrReplace('fd00:10:244:1::1/128', 'veth1a2b3c4d', { nodad: true }),
      routeAdd('10.244.1.5/32', { dev: 'veth1a2b3c4d', scope: 'link' }),
      routeAdd('fd00:10:244:1::5/128', { dev: 'veth1a2b3c4d', scope: 'link' }),
    ],
    pod: [
      linkUp('lo'),
      linkUp('eth0'),
      addrAdd('10.244.1.5/24', 'eth0', { noprefixroute: true }),
      routeAdd('10.244.1.1/32', { dev: 'eth0', scope: 'link', src: '10.244.1.5' }),
      routeAdd('10.244.1.0/24', { via: '10.244.1.1', dev: 'eth0', src: '10.244.1.5' }),
      routeReplace('default', { via: '10.244.1.1', dev: 'eth0' }),
      addrAdd('fd00:10:244:1::5/64', 'eth0', { noprefixroute: true, nodad: true }),
      routeAdd('fd00:10:244:1::1/128', { dev: 'eth0', scope: 'link', src: 'fd00:10:244:1::5' }),
      routeReplace('default', { via: 'fd00:10:244:1::1', dev: 'eth0' }),
      linkSet('eth0', { mtu: 1400 }),
    ],
  };
}

type J = Record<string, unknown>;

/** What `ip -j` shows of links, addresses and routes, without what differs per namespace. */
async function state(lab: NetnsLab, ns: string): Promise<unknown> {
  const links = (JSON.parse(await lab.ip(ns, '-j', '-d', 'addr', 'show')) as J[]).map((l) => ({
    ifname: l.ifname,
    // Carrier (NO-CARRIER, LOWER_UP) follows the peer asynchronously: not what was asked.
    flags: (l.flags as string[]).filter((f) => f !== 'NO-CARRIER' && f !== 'LOWER_UP'),
    mtu: l.mtu,
    address: l.address,
    kind: (l.linkinfo as J | undefined)?.info_kind,
    addrs: ((l.addr_info as J[] | undefined) ?? [])
      .filter((a) => !(a.family === 'inet6' && a.scope === 'link'))
      .map((a) => ({
        local: a.local,
        prefixlen: a.prefixlen,
        scope: a.scope,
        noprefixroute: a.noprefixroute,
      })),
  }));
  const routes = async (fam: '-4' | '-6'): Promise<unknown[]> =>
    (JSON.parse(await lab.ip(ns, fam, '-j', 'route', 'show')) as J[])
      .filter((r) => r.dst !== 'fe80::/64')
      .map((r) => ({
        dst: r.dst,
        gateway: r.gateway,
        dev: r.dev,
        scope: r.scope,
        protocol: r.protocol,
        prefsrc: r.prefsrc,
      }));
  return { links, v4: await routes('-4'), v6: await routes('-6') };
}

describe('rtnetlink from this process does what ip does', { skip }, () => {
  const lab = new NetnsLab('nl');
  const real = new RealIp(new RealExecer());
  let netlink: NetlinkIp;

  before(async () => {
    await lab.sweep();
    netlink = new NetlinkIp(real);
  });
  after(async () => {
    await lab.cleanup();
  });

  async function attach(ip: Ip, tag: string): Promise<{ node: string; pod: string }> {
    const node = await lab.add(`${tag}-node`);
    const pod = await lab.add(`${tag}-pod`);
    await lab.ip(pod, 'link', 'set', 'lo', 'down');
    const ops = ptpOps(pod);
    await ip.batch(netnsPath(node), ops.host);
    await ip.batch(netnsPath(pod), ops.pod);
    return { node, pod };
  }

  test('a ptp attachment (IPv4 and IPv6) leaves the same links, addresses and routes', async () => {
    const ours = await attach(netlink, 'a');
    const theirs = await attach(real, 'b');
    assert.deepEqual(await state(lab, ours.node), await state(lab, theirs.node));
    assert.deepEqual(await state(lab, ours.pod), await state(lab, theirs.pod));
    // The attachment works: the Pod reaches its gateway address on the node.
    assert.equal(await lab.ping(ours.pod, '10.244.1.1'), true);
  });

  test('failures read as iproute2 prints them, naming the namespace and the op', async () => {
    const node = await lab.add('e-node');
    const pod = await lab.add('e-pod');
    const veth = vethPair({ host: 'vethdup', peer: 'eth0', netns: pod });
    await netlink.batch(netnsPath(node), [veth]);
    await assert.rejects(
      netlink.batch(netnsPath(node), [veth]),
      (e: unknown) =>
        e instanceof IpError &&
        e.message.startsWith(`ip in ${netnsPath(node)}: "link add vethdup`) &&
        e.message.endsWith('RTNETLINK answers: File exists'),
    );
    await assert.rejects(
      netlink.batch(netnsPath(node), [linkUp('nosuchdev')]),
      /"link set nosuchdev up": Cannot find device "nosuchdev"$/,
    );
    // The batch stops at the first failure: the op after it is not applied.
    await assert.rejects(
      netlink.batch(netnsPath(node), [
        linkSet('vethdup', { mtu: 1400 }),
        routeAdd('10.9.0.0/24', { dev: 'vethdup' }),
        linkUp('vethdup'),
      ]),
      /"route add 10\.9\.0\.0\/24 dev vethdup": RTNETLINK answers: Network is down$/,
    );
    const shown = await lab.ip(node, 'link', 'show', 'vethdup');
    assert.match(shown, /mtu 1400 /, 'the op before the failure was applied');
    assert.doesNotMatch(shown, /[<,]UP[,>]/, 'the op after it was not');
  });

  test('DEL ops remove the routes, addresses and the veth pair', async () => {
    const { node, pod } = await attach(netlink, 'd');
    await netlink.batch(netnsPath(node), [
      routeDel('10.244.1.5/32', { dev: 'veth1a2b3c4d' }),
      linkDel('veth1a2b3c4d'),
    ]);
    assert.doesNotMatch(await lab.ip(node, 'link', 'show'), /veth1a2b3c4d/);
    assert.doesNotMatch(await lab.ip(pod, 'link', 'show'), /eth0/);
  });

  test('deleteLink: true when it removed the link, false when there was none', async () => {
    const { node, pod } = await attach(netlink, 'k');
    assert.equal(await netlink.deleteLink(netnsPath(node), 'veth1a2b3c4d'), true);
    assert.doesNotMatch(await lab.ip(pod, 'link', 'show'), /eth0/);
    assert.equal(await netlink.deleteLink(netnsPath(node), 'veth1a2b3c4d'), false);
  });
});
