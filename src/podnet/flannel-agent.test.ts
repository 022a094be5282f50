import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { FakeInformer } from '../kube/informer.js';
import { node } from '../kube/testing.js';
import type { Node } from '../kube/types.js';
import { FakeExecer } from '../os/exec.js';
import { FakeIp } from '../os/ip.js';
import { addrAdd, dummy, linkUp, routeAdd } from '../util/ip-ops.js';
import { FlannelAgent } from './flannel-agent.js';
import { parseNetConf } from './parse-net-conf.js';

function annotated(name: string, cidr: string | undefined, ann: Record<string, string>): Node {
  const n = node(name, cidr === undefined ? {} : { podCIDR: cidr });
  return { ...n, metadata: { ...n.metadata, annotations: ann } };
}

async function setup() {
  const ip = new FakeIp();
  await ip.batch(undefined, [
    dummy('eth0', { mtu: 1500 }),
    addrAdd('192.168.1.2/24', 'eth0'),
    linkUp('eth0'),
    routeAdd('default', { via: '192.168.1.1' }),
  ]);
  const nodes = new FakeInformer<Node>([
    annotated('n1', '10.244.1.0/24', {}),
    annotated('n2', '10.244.2.0/24', {
      'flannel.alpha.coreos.com/backend-type': 'vxlan',
      'flannel.alpha.coreos.com/backend-data': '{"VNIType":1,"VtepMAC":"0e:00:00:00:00:02"}',
      'flannel.alpha.coreos.com/public-ip': '192.168.2.2',
    }),
    annotated('bare', undefined, {}),
  ]);
  const patches: unknown[] = [];
  const files = new Map<string, string>();
  const lines: string[] = [];
  const log = pino(
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  );
  const execer = new FakeExecer().expect(
    { cmd: 'iptables', args: (a) => a.includes('nat'), result: { code: 1 } },
    { cmd: 'iptables', args: (a) => a.includes('filter'), result: { code: 0 } },
    {
      cmd: 'iptables-restore',
      check: (r) => {
        const text = String(r.stdin);
        assert.match(
          text,
          /-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG/,
        );
        assert.doesNotMatch(text, /-A FORWARD /);
        assert.match(
          text,
          /-A FLANNEL-POSTRTG -s 10.244.0.0\/16 ! -d 224.0.0.0\/4 .* -j MASQUERADE --random-fully/,
        );
      },
    },
  );
  const agent = new FlannelAgent({
    nodeName: 'n1',
    conf: parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}', 'f'),
    subnetFile: '/run/flannel/subnet.env',
    ipMasq: true,
    ip,
    execer,
    nodes,
    patchNode: (name, patch) => {
      patches.push({ name, patch });
      return Promise.resolve();
    },
    writeFile: (path, text) => {
      files.set(path, text);
      return Promise.resolve();
    },
    log,
    resyncMs: 3_600_000,
  });
  return { ip, nodes, agent, patches, files, lines, execer };
}

test('flannel agent: programs flannel.1 and the peers, annotates its Node, writes subnet.env, masquerades', async () => {
  const { ip, agent, patches, files, lines, execer } = await setup();
  await agent.start();
  const mac = (await ip.links(undefined)).find((l) => l.name === 'flannel.1')?.mac ?? '';
  assert.match(
    ip.dump(undefined),
    /link flannel.1 vxlan up 10.244.1.0\/32\n[^]*route 10.244.2.0\/24 via 10.244.2.0 dev flannel.1\n[^]*fdb 0e:00:00:00:00:02 dst 192.168.2.2 dev flannel.1\nneigh 10.244.2.0 lladdr 0e:00:00:00:00:02 dev flannel.1$/,
  );
  const link = (await ip.links(undefined)).find((l) => l.name === 'flannel.1');
  assert.deepEqual(
    { mtu: link?.mtu, vxlan: link?.vxlan },
    { mtu: 1450, vxlan: { id: 1, port: 8472, local: '192.168.1.2', learning: false } },
  );
  assert.deepEqual(patches, [
    {
      name: 'n1',
      patch: {
        metadata: {
          annotations: {
            'flannel.alpha.coreos.com/backend-type': 'vxlan',
            'flannel.alpha.coreos.com/backend-data': `{"VNIType":1,"VtepMAC":"${mac}"}`,
            'flannel.alpha.coreos.com/public-ip': '192.168.1.2',
            'flannel.alpha.coreos.com/kube-subnet-manager': 'true',
          },
        },
      },
    },
  ]);
  assert.equal(
    files.get('/run/flannel/subnet.env'),
    'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
  );
  execer.verify();
  assert.ok(
    lines.some((l) => l.includes('"node":"bare"') && l.includes('spec.podCIDR is not set')),
    'the Node without podCIDR is logged',
  );
  await agent.stop();
});

test('flannel agent: a deleted flannel.1 comes back with the same MAC and entries; a deleted Node loses its entries', async () => {
  const { ip, nodes, agent, patches } = await setup();
  await agent.start();
  const before = ip.dump(undefined);
  const mac = (await ip.links(undefined)).find((l) => l.name === 'flannel.1')?.mac;
  assert.equal(await ip.deleteLink(undefined, 'flannel.1'), true);
  await agent.syncNow();
  assert.equal(ip.dump(undefined), before);
  assert.equal((await ip.links(undefined)).find((l) => l.name === 'flannel.1')?.mac, mac);
  assert.equal(patches.length, 1, 'the same MAC needs no new annotation');
  nodes.delete('n2');
  await agent.syncNow();
  assert.doesNotMatch(ip.dump(undefined), /10\.244\.2\.0|0e:00:00:00:00:02/);
  await agent.stop();
});
