import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcnetError } from '../errors.js';
import { nfacctObjects, runRender } from './render.js';

const dir = mkdtempSync(join(tmpdir(), 'svcnet-render-'));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

async function rejects(p: Promise<unknown>, re: RegExp): Promise<void> {
  await assert.rejects(
    p,
    (e: unknown) => e instanceof SvcnetError && e.code === 'INVALID_INPUT' && re.test(e.message),
  );
}

test('renders examples/nginx.yaml as kube-proxy would, IPv4 only', async () => {
  const out = await runRender({ file: ['examples/nginx.yaml'] }, []);
  assert.match(out, /^# svcnet render --mode iptables/);
  assert.match(out, /# ===== IPv4: input for `iptables-restore --noflush --counters` =====/);
  assert.doesNotMatch(out, /IPv6/);
  assert.match(
    out,
    /-A KUBE-SERVICES -m comment --comment "default\/nginx-svc cluster IP" -m tcp -p tcp -d 10\.96\.45\.12 --dport 3000 -j KUBE-SVC-HL5LMXD5JFHQZ6LN/,
  );
  assert.equal(out.match(/-j DNAT --to-destination 10\.244\.\d+\.\d+:80/g)?.length, 3);
  assert.match(out, /! -s 10\.244\.0\.0\/16 -j KUBE-MARK-MASQ/, 'default cluster CIDR');
  assert.match(
    out,
    /# {3}iptables -t nat -I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES/,
  );
});

test('flags: --node picks local endpoints, --cluster-cidr and --config shape the rules', async () => {
  const cfg = file(
    'kp.yaml',
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\niptables: {masqueradeBit: 15, localhostNodePorts: false}\n',
  );
  const out = await runRender(
    {
      file: ['examples/nodeport.yaml'],
      node: 'node-2',
      clusterCidr: '10.32.0.0/12',
      config: cfg,
      nodeIp: ['192.168.5.5'],
    },
    [],
  );
  assert.match(out, /--or-mark 0x8000/);
  assert.match(out, /! -s 10\.32\.0\.0\/12/);
  assert.doesNotMatch(out, /127\.0\.0\.0\/8 --dport/, 'localhostNodePorts false');
  assert.match(
    out,
    /# node node-2 \(no Node in the manifests\): IP 192\.168\.5\.5 \(from --node-ip\)/,
  );
});

test('an IPv6 Service adds a clearly marked ip6tables section', async () => {
  const f = file(
    'v6.yaml',
    `apiVersion: v1
kind: Service
metadata: {name: v6, namespace: default}
spec:
  clusterIP: fd00:96::10
  clusterIPs: [fd00:96::10]
  ipFamilies: [IPv6]
  ports: [{port: 80}]
`,
  );
  const out = await runRender({ file: [f], nodeIp: ['172.18.0.2', 'fc00::2'] }, []);
  assert.match(out, /# ===== IPv6: input for `ip6tables-restore --noflush --counters` =====/);
  assert.match(
    out,
    /"default\/v6 has no endpoints" -m tcp -p tcp -d fd00:96::10 --dport 80 -j REJECT/,
  );
  assert.match(out, /! -d ::1\/128 -j KUBE-NODEPORTS/);
});

test('bad input: exit-2 errors naming the object and field', async () => {
  await rejects(
    runRender({ mode: 'kernelspace', file: ['examples/nginx.yaml'] }, []),
    /^--mode: proxy mode "kernelspace" is not built yet/,
  );
  await rejects(
    runRender({ mode: 'userspace', file: ['examples/nginx.yaml'] }, []),
    /^--mode: must be one of iptables, nftables, ipvs, kernelspace, got "userspace"$/,
  );
  const bad = file(
    'bad.yaml',
    'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  clusterIP: 10.96.0.300\n  ports: [{port: 0, protocol: HTTP}]\n',
  );
  await rejects(
    runRender({ file: [bad] }, []),
    /Service default\/web: spec\.ports\[0\]\.port: must be 1-65535, got 0/,
  );
  await rejects(
    runRender({ file: [bad] }, []),
    /spec\.ports\[0\]\.protocol: must be TCP, UDP or SCTP/,
  );
  await rejects(runRender({ file: [bad] }, []), /spec\.clusterIP: must be a valid IP address/);
  await rejects(
    runRender(
      { file: [file('kind.yaml', 'apiVersion: v1\nkind: Servic\nmetadata: {name: x}\n')] },
      [],
    ),
    /unknown kind "Servic"/,
  );
  await rejects(runRender({ file: [file('y.yaml', 'kind: [\n')] }, []), /invalid YAML/);
  await rejects(runRender({ file: [join(dir, 'missing.yaml')] }, []), /cannot read file/);
  await rejects(
    runRender({ file: ['examples/nginx.yaml'], nodeIp: ['1.2.3'] }, []),
    /--node-ip\[0\]: must be an IP address/,
  );
  await rejects(
    runRender({ file: ['examples/nginx.yaml'], clusterCidr: '10.0.0.0' }, []),
    /--cluster-cidr/,
  );
  const cfg = file(
    'kp-bad.yaml',
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\niptables: {masqueradeBit: 99}\n',
  );
  await rejects(
    runRender({ file: ['examples/nginx.yaml'], config: cfg }, []),
    /KubeProxyConfiguration .*kp-bad\.yaml: iptables\.masqueradeBit: must be 0-31/,
  );
});

test('--mode nftables: the nft transaction of table ip kube-proxy, kube-proxy v1.37 layout', async () => {
  const out = await runRender({ mode: 'nftables', file: ['examples/nginx.yaml'] }, []);
  assert.match(out, /^# svcnet render --mode nftables/);
  assert.match(out, /# ===== IPv4: transaction for `nft -f -` \(table ip kube-proxy\) =====/);
  assert.doesNotMatch(out, /IPv6|iptables-restore|KUBE-/);
  assert.match(out, /^add table ip kube-proxy \{ comment "rules for kube-proxy" ; \}$/m);
  assert.match(
    out,
    /^add element ip kube-proxy service-ips \{ 10\.96\.45\.12 \. tcp \. 3000 : goto service-\w{8}-default\/nginx-svc\/tcp\/ \}$/m,
  );
  assert.match(
    out,
    /dnat ip addr \. port to numgen random mod 3 map \{ 0 : 10\.244\.\d+\.\d+ \. 80 , 1 : /,
  );
  assert.match(
    out,
    /ip saddr != 10\.244\.0\.0\/16 mark set mark or 0x4000/,
    'default cluster CIDR',
  );
  // nodePortAddresses defaults to the node's primary IP in this mode.
  assert.match(out, /^add element ip kube-proxy nodeport-ips \{ 172\.18\.0\.2 \}$/m);
});

test('--mode nftables: --config honours mode: nftables and the nftables section; IPv6 gets ip6 kube-proxy', async () => {
  const cfg = file(
    'kp-nft.yaml',
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\nnftables: {masqueradeBit: 15, masqueradeAll: true}\niptables: {masqueradeBit: 3}\nnodePortAddresses: [all]\n',
  );
  const v6 = file(
    'v6.yaml',
    'apiVersion: v1\nkind: Service\nmetadata: {name: web6, namespace: default}\nspec:\n  type: NodePort\n  clusterIP: fd00:10:96::10\n  ipFamilies: [IPv6]\n  ports: [{port: 80, nodePort: 30080}]\n',
  );
  const out = await runRender({ file: ['examples/nginx.yaml', v6], config: cfg }, []);
  assert.match(out, /^# svcnet render --mode nftables/);
  assert.match(
    out,
    /ip daddr @cluster-ips mark set mark or 0x8000 comment "masquerade all clusterIP traffic"/,
  );
  assert.match(
    out,
    /fib daddr type local ip daddr != 127\.0\.0\.0\/8 meta l4proto \. th dport vmap @service-nodeports/,
  );
  assert.match(out, /^delete set ip kube-proxy nodeport-ips$/m);
  assert.match(out, /# ===== IPv6: transaction for `nft -f -` \(table ip6 kube-proxy\) =====/);
  assert.match(
    out,
    /^add element ip6 kube-proxy no-endpoint-services \{ fd00:10:96::10 \. tcp \. 80 comment "default\/web6" : goto reject-chain \}$/m,
  );
  assert.match(
    out,
    /fib daddr type local ip6 daddr != ::1 meta l4proto \. th dport vmap @service-nodeports/,
  );
});

test('--mode nftables: a ServiceCIDR in the manifests renders the drop rule for its family only; iptables mode ignores it', async () => {
  const cidrs = file(
    'servicecidr.yaml',
    'apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: kubernetes}\nspec: {cidrs: [10.96.0.0/12, fd00:10:96::/112]}\n',
  );
  const drop =
    /^add rule ip kube-proxy cluster-ips-check ip daddr \{ 10\.96\.0\.0\/12 \} drop comment "Drop traffic to unallocated ClusterIPs"$/m;
  const without = await runRender({ mode: 'nftables', file: ['examples/nginx.yaml'] }, []);
  assert.doesNotMatch(without, /Drop traffic to unallocated ClusterIPs/);
  const out = await runRender({ mode: 'nftables', file: ['examples/nginx.yaml', cidrs] }, []);
  assert.match(out, drop);
  assert.doesNotMatch(out, /fd00:10:96::/, 'the IPv6 CIDR belongs to ip6 kube-proxy');
  const ipt = await runRender({ mode: 'iptables', file: ['examples/nginx.yaml', cidrs] }, []);
  assert.doesNotMatch(ipt, /unallocated|10\.96\.0\.0\/12/);
});

test('every example renders', async () => {
  for (const f of ['examples/nginx.yaml', 'examples/nodeport.yaml', 'examples/kube-dns.yaml']) {
    const out = await runRender({ file: [f] }, []);
    assert.match(out, /\*nat\n/, f);
  }
  const dns = await runRender({ file: ['examples/kube-dns.yaml'] }, []);
  assert.match(
    dns,
    /"kube-system\/kube-dns:dns cluster IP" -m udp -p udp -d 10\.96\.0\.10 --dport 53/,
  );
  assert.equal(dns.match(/^:KUBE-SVC-/gm)?.length, 3, 'one chain per port');
});

test("--config: kubeadm's config.conf renders; its mode is honoured (ipvs included)", async () => {
  const conf = readFileSync(
    join(import.meta.dirname, '..', 'proxy', 'testdata', 'kubeadm-config.conf'),
    'utf8',
  );
  const ok = file('config.conf', conf);
  const out = await runRender({ file: ['examples/nginx.yaml'], config: ok }, []);
  assert.match(out, /cluster CIDR 10\.244\.0\.0\/16 \(from --config\)/);
  assert.equal(out.match(/-j DNAT --to-destination 10\.244\.\d+\.\d+:80/g)?.length, 3);
  const ipvs = file('config-ipvs.conf', conf.replace('mode: iptables', 'mode: ipvs'));
  const fromFile = await runRender({ file: ['examples/nginx.yaml'], config: ipvs }, []);
  assert.match(fromFile, /^# svcnet render --mode ipvs/);
  const space = file('config-ks.conf', conf.replace('mode: iptables', 'mode: kernelspace'));
  await rejects(
    runRender({ file: ['examples/nginx.yaml'], config: space }, []),
    /config-ks\.conf: mode: proxy mode "kernelspace" is not built yet/,
  );
  // An explicit --mode wins over the file's, as kube-proxy's flags do.
  const forced = await runRender(
    { file: ['examples/nginx.yaml'], config: ipvs, mode: 'iptables' },
    [],
  );
  assert.match(forced, /KUBE-SVC-HL5LMXD5JFHQZ6LN/);
});

test('the nfacct objects the rules use are listed as what must exist before the restore', async () => {
  const out = await runRender({ file: ['examples/nodeport.yaml'] }, []);
  const used = [...new Set([...out.matchAll(/-m nfacct --nfacct-name (\S+)/g)].map((m) => m[1]))];
  assert.ok(used.length > 0, 'the rules use nfacct');
  const before = out.indexOf('# must exist before the restore');
  assert.ok(before >= 0 && before < out.indexOf('*filter'));
  for (const name of used) assert.match(out, new RegExp(`^# {3}nfacct add ${name ?? ''}$`, 'm'));
  assert.deepEqual(
    nfacctObjects(
      '-A X -m nfacct --nfacct-name b -j DROP\n-A Y -m nfacct --nfacct-name a -j ACCEPT\n-A Z -m nfacct --nfacct-name b',
    ),
    ['a', 'b'],
  );
});

test('warns naming objects defined twice and the one that wins', async () => {
  const svc = (ip: string) =>
    `apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  clusterIP: ${ip}\n  ports: [{port: 80}]\n`;
  const a = file('dup-a.yaml', `${svc('10.96.0.20')}---\n${svc('10.96.0.21')}`);
  const b = file('dup-b.yaml', svc('10.96.0.22'));
  const warnings: string[] = [];
  const out = await runRender({ file: [a, b] }, warnings);
  assert.deepEqual(warnings, [
    `Service default/web is defined 3 times (${a} (document 1), ${a} (document 2), ${b}); the last, in ${b}, wins`,
  ]);
  assert.match(out, /-d 10\.96\.0\.22 --dport 80/);
  assert.doesNotMatch(out, /10\.96\.0\.2[01]/);
  const none: string[] = [];
  await runRender({ file: [b] }, none);
  assert.deepEqual(none, []);
});

const WALKTHROUGH_NGINX = `apiVersion: v1
kind: Service
metadata: {name: nginx, namespace: default}
spec:
  clusterIP: 10.102.97.154
  selector: {app: nginx}
  ports: [{port: 80, protocol: TCP, targetPort: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: nginx-abc, namespace: default, labels: {kubernetes.io/service-name: nginx}}
addressType: IPv4
endpoints:
- addresses: [192.168.76.141]
  conditions: {ready: true}
- addresses: [192.168.76.142]
  conditions: {ready: true}
ports: [{port: 80, protocol: TCP}]
`;

test("--mode ipvs --format ipvsadm-list: the walkthrough's nginx as `ipvsadm -L -n` shows it", async () => {
  const f = file('walkthrough-nginx.yaml', WALKTHROUGH_NGINX);
  const out = await runRender({ mode: 'ipvs', format: 'ipvsadm-list', file: [f] }, []);
  assert.equal(
    out,
    [
      'IP Virtual Server version 1.2.1 (size=4096)',
      'Prot LocalAddress:Port Scheduler Flags',
      '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn',
      'TCP  10.102.97.154:80 rr',
      '  -> 192.168.76.141:80            Masq    1      0          0         ',
      '  -> 192.168.76.142:80            Masq    1      0          0         ',
    ].join('\n'),
  );
  await rejects(
    runRender({ mode: 'iptables', format: 'ipvsadm-list', file: [f] }, []),
    /^--format ipvsadm-list: needs --mode ipvs/,
  );
  await rejects(
    runRender({ mode: 'ipvs', format: 'json', file: [f] }, []),
    /^--format: must be one of restore, ipvsadm-list/,
  );
});

test('--mode ipvs: ipvsadm -S -n, ipset save and iptables-restore sections', async () => {
  const f = file('walkthrough-nginx2.yaml', WALKTHROUGH_NGINX);
  const out = await runRender({ mode: 'ipvs', file: [f] }, []);
  assert.match(out, /^# svcnet render --mode ipvs/);
  assert.match(out, /^-A -t 10\.102\.97\.154:80 -s rr$/m);
  assert.match(out, /^-a -t 10\.102\.97\.154:80 -r 192\.168\.76\.141:80 -m -w 1$/m);
  assert.match(
    out,
    /^create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536$/m,
  );
  assert.match(out, /^add KUBE-CLUSTER-IP 10\.102\.97\.154,tcp:80$/m);
  assert.match(out, /^add KUBE-IPVS-IPS 10\.102\.97\.154$/m);
  assert.match(out, /# kube-ipvs0 addresses: 10\.102\.97\.154/);
  assert.match(
    out,
    /^-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip \+ port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10\.244\.0\.0\/16 -j KUBE-MARK-MASQ$/m,
  );
  assert.match(out, /^-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000$/m);
  assert.match(out, /^\*filter$/m);
});
