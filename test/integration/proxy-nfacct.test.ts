// The proxy's nfacct counters on a real kernel: the in-process proxy (FakeInformers) programs
// a node namespace, creating kube-proxy's two nfacct objects there through the `nfacct`
// tool. Checks that connections to a NodePort on 127.0.0.1 from the node raise
// kubeproxy_iptables_localhost_nodeports_accepted_packets_total by one each while the same
// NodePort hit from outside does not, and that a forwarded packet conntrack calls INVALID
// (TCP SYN+FIN) is dropped and raises kubeproxy_iptables_ct_state_invalid_dropped_packets_total.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLIENT_IP, NODE_IP, ProxyLab, nsExec, skipReason, waitFor } from './lib/proxy-lab.js';
import { service, slice, startInProcessProxy } from './lib/proxy-driver.js';
import type { InProcessProxy } from './lib/proxy-driver.js';
import { skipOrFail } from './lib/prereq.js';

const NODE = 'node-nfacct';
const PORT = 8080;
const NODE_PORT = 30555;
const skip = skipOrFail(skipReason(['ip', 'iptables-restore', 'curl', 'nfacct', 'python3']));

// Sends one TCP segment with SYN and FIN set (an invalid flag combination for conntrack)
// from argv[1] to argv[2]:argv[3] through a raw socket; the kernel fills in the IP header.
const SYN_FIN = `
import socket, struct, sys
src, dst, dport = sys.argv[1], sys.argv[2], int(sys.argv[3])
def csum(b):
    if len(b) % 2: b += b'\\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
tcp = struct.pack('!HHIIBBHHH', 40404, dport, 1, 0, 5 << 4, 0x03, 64240, 0, 0)
pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack('!BBH', 0, 6, len(tcp))
tcp = tcp[:16] + struct.pack('!H', csum(pseudo + tcp)) + tcp[18:]
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0,
                 socket.inet_aton(src), socket.inet_aton(dst))
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
s.sendto(ip + tcp, (dst, 0))
`;

describe('svcnet proxy nfacct counters (iptables mode)', { skip }, () => {
  let lab: ProxyLab;
  let proxy: InProcessProxy;

  before(async () => {
    lab = ProxyLab.create('svcnet-pxn');
    lab.addPod('pod-a', PORT);
    await lab.waitForPods(PORT);
    // The in-process proxy's sysctls are faked; localhost NodePorts need this one for real.
    nsExec(lab.node, 'sysctl', ['-qw', 'net.ipv4.conf.all.route_localnet=1']);
    proxy = await startInProcessProxy(lab.node, NODE);
    await proxy.startInformers();
  });

  after(async () => {
    await proxy.stop();
    lab.destroy();
  });

  const metric = async (name: string): Promise<number> => {
    const text = await (
      await fetch(`http://127.0.0.1:${String(proxy.daemon.metricsPort)}/metrics`)
    ).text();
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    assert.ok(m?.[1] !== undefined, `${name} not exported`);
    return Number(m[1]);
  };
  const LOCALHOST = 'kubeproxy_iptables_localhost_nodeports_accepted_packets_total';
  const INVALID = 'kubeproxy_iptables_ct_state_invalid_dropped_packets_total';

  test('both objects exist in the node namespace and the rules match them', async () => {
    assert.deepEqual(proxy.daemon.nfacct, {
      ctStateInvalidDropped: true,
      localhostNodePortsAccepted: true,
    });
    const list = nsExec(lab.node, 'nfacct', ['list']);
    assert.match(list, /= localhost_nps_accepted_pkts;/);
    assert.match(list, /= ct_state_invalid_dropped_pkts;/);
    await waitFor(
      () =>
        /-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name +ct_state_invalid_dropped_pkts -j DROP/.test(
          nsExec(lab.node, 'iptables-save', ['-t', 'filter']),
        ),
      15_000,
      'the INVALID drop rule with its nfacct match',
    );
  });

  test('each connection to 127.0.0.1:NodePort from the node counts one packet; from outside none', async () => {
    proxy.services.upsert(service('np', '10.96.0.55', PORT, { nodePort: NODE_PORT }));
    proxy.slices.upsert(slice('np', PORT, [lab.pods[0]!.ip], NODE));
    await waitFor(
      () => lab.tryHttp(lab.node, `127.0.0.1:${NODE_PORT}`)?.startsWith('pod-a') === true,
      15_000,
      'localhost NodePort answers',
    );
    const before = await metric(LOCALHOST);
    assert.ok(before >= 1, `the answered request was counted (${before})`);
    for (let i = 0; i < 3; i++)
      assert.match(lab.tryHttp(lab.node, `127.0.0.1:${NODE_PORT}`) ?? '', /^pod-a /);
    assert.equal(await metric(LOCALHOST), before + 3);

    // The same NodePort on the node IP from the client: accepted by the other rule.
    assert.match(lab.tryHttp(lab.client, `${NODE_IP}:${NODE_PORT}`) ?? '', /^pod-a /);
    assert.equal(await metric(LOCALHOST), before + 3);
    assert.match(
      nsExec(lab.node, 'nfacct', ['get', 'localhost_nps_accepted_pkts']),
      new RegExp(`pkts = 0*${before + 3},`),
    );
  });

  test('a forwarded TCP SYN+FIN is INVALID: dropped and counted', async () => {
    const before = await metric(INVALID);
    const send = (): void => {
      const r = spawnSync(
        'ip',
        ['netns', 'exec', lab.client, 'python3', '-c', SYN_FIN, CLIENT_IP, lab.pods[0]!.ip, '8080'],
        { encoding: 'utf8', timeout: 10_000 },
      );
      assert.equal(r.status, 0, r.stderr);
    };
    send();
    send();
    await waitFor(async () => (await metric(INVALID)) >= before + 2, 5_000, 'INVALID count +2');
    assert.equal(await metric(INVALID), before + 2);
  });
});
