import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const main = join(import.meta.dirname, 'main.ts');

function svcnet(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', main, ...args], { encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `svcnet trace` of a packet from `src` to `dst` through `input` (--rules FILE or -f FILE). */
function trace(input: string[], src: string, dst: string, ...flags: string[]) {
  return svcnet(['trace', ...input, '--src', src, '--dst', dst, ...flags]);
}

const RULES = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
-A KUBE-SERVICES -m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 10.96.0.20 --dport 80 -j KUBE-SVC-A
-A KUBE-SVC-A -m comment --comment "default/web:http -> 10.244.1.2:8080" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-1
-A KUBE-SVC-A -m comment --comment "default/web:http -> 10.244.2.2:8080" -j KUBE-SEP-2
-A KUBE-SEP-1 -m comment --comment default/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080
-A KUBE-SEP-2 -m comment --comment default/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.2.2:8080
COMMIT
`;

const MANIFESTS = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.0.20
  ports: [{name: http, port: 80, protocol: TCP, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
- addresses: [10.244.1.2]
  targetRef: {kind: Pod, name: web-a}
- addresses: [10.244.2.2]
ports: [{name: http, port: 8080, protocol: TCP}]
`;

test('svcnet trace: tree, --json, -f manifests, and exit 2 naming the bad field or line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-'));
  try {
    const rules = join(dir, 'rules');
    writeFileSync(rules, RULES);
    const tree = trace(['--rules', rules], '10.244.0.5', '10.96.0.20:80');
    assert.equal(tree.code, 0, tree.stderr);
    assert.match(tree.stdout, /2 possible outcomes/);
    assert.match(tree.stdout, /\[1\] 50%\s+DNAT to 10\.244\.1\.2:8080 — Service default\/web:http/);

    const json = trace(['--rules', rules], '10.244.0.5', '10.96.0.20:80/tcp', '--json');
    assert.equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout) as { outcomes: { dnat: string; probability: number }[] };
    assert.deepEqual(
      doc.outcomes.map((o) => [o.dnat, o.probability]),
      [
        ['10.244.1.2:8080', 0.5],
        ['10.244.2.2:8080', 0.5],
      ],
    );

    const manifests = join(dir, 'web.yaml');
    writeFileSync(manifests, MANIFESTS);
    const rendered = trace(
      ['-f', manifests],
      '10.244.0.5',
      '10.96.0.20:80',
      '--pod-cidr',
      '10.244.0.0/16',
      '--json',
    );
    assert.equal(rendered.code, 0, rendered.stderr);
    const r2 = JSON.parse(rendered.stdout) as { outcomes: { dnat: string; masquerade: boolean }[] };
    assert.deepEqual(r2.outcomes.map((o) => o.dnat).sort(), ['10.244.1.2:8080', '10.244.2.2:8080']);

    const brief = trace(['-f', manifests], '10.244.0.5', '10.96.0.20:80', '--brief');
    assert.equal(brief.code, 0, brief.stderr);
    assert.match(brief.stdout, /endpoint 10\.244\.1\.2:8080 \(Pod default\/web-a\)/);
    assert.doesNotMatch(brief.stdout, /KUBE-SEP-/);

    const badArgs = trace(['--rules', rules], '10.244.0.300', '10.96.0.20:99999/icmp');
    assert.equal(badArgs.code, 2);
    assert.equal(badArgs.stdout, '');
    assert.match(badArgs.stderr, /--src: not an IP address: "10\.244\.0\.300"/);
    assert.match(badArgs.stderr, /--dst: protocol must be tcp, udp or sctp/);
    assert.match(badArgs.stderr, /--dst: port must be 1-65535/);

    writeFileSync(
      rules,
      '*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment "open\nCOMMIT\n',
    );
    const badFile = trace(['--rules', rules], '10.244.0.5', '10.96.0.20:80');
    assert.equal(badFile.code, 2);
    assert.match(badFile.stderr, /rules: line 3: unterminated quote/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** What `nft list ruleset` prints for one ClusterIP Service with one endpoint. */
const NFT_LIST = `table ip kube-proxy {
	comment "rules for kube-proxy"
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		elements = { 10.96.0.20 . tcp . 80 : goto service-SUSTUHLJ-default/web/tcp/http }
	}

	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		jump services
	}

	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
	}

	chain service-SUSTUHLJ-default/web/tcp/http {
		meta l4proto tcp dnat ip to numgen random mod 1 map { 0 : 10.244.1.2 . 8080 }
	}
}
`;

test('svcnet trace over nftables: -f --mode nftables, a render and an nft list dump as --rules', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-nft-'));
  try {
    const manifests = join(dir, 'web.yaml');
    writeFileSync(manifests, MANIFESTS);
    const viaMode = trace(['-f', manifests, '--mode', 'nftables'], '10.244.0.5', '10.96.0.20:80');
    assert.equal(viaMode.code, 0, viaMode.stderr);
    assert.match(
      viaMode.stdout,
      /\[1\] 50%\s+DNAT to 10\.244\.1\.2:8080 — Service default\/web:http, endpoint 10\.244\.1\.2:8080 \(Pod default\/web-a\)/,
    );
    assert.match(
      viaMode.stdout,
      /ip kube-proxy services #2: 10\.96\.0\.20 \. tcp \. 80 in @service-ips: goto service-SUSTUHLJ-default\/web\/tcp\/http/,
    );
    assert.doesNotMatch(viaMode.stdout, /KUBE-/);

    // `svcnet render --mode nftables` output, read back with the format detected.
    const render = svcnet(['render', '--mode', 'nftables', '-f', manifests]);
    assert.equal(render.code, 0, render.stderr);
    const rendered = join(dir, 'render.nft');
    writeFileSync(rendered, render.stdout);
    const fromRender = trace(['--rules', rendered], '10.244.0.5', '10.96.0.20:80', '--json');
    assert.equal(fromRender.code, 0, fromRender.stderr);
    const viaProxyMode = trace(
      ['-f', manifests, '--proxy-mode', 'nftables'],
      '10.244.0.5',
      '10.96.0.20:80',
      '--json',
      '--from-external',
    );
    const outcomes = (out: string) =>
      (JSON.parse(out) as { outcomes: { dnat: string; probability: number }[] }).outcomes.map(
        (o) => [o.dnat, o.probability],
      );
    assert.deepEqual(outcomes(fromRender.stdout), [
      ['10.244.1.2:8080', 0.5],
      ['10.244.2.2:8080', 0.5],
    ]);
    assert.deepEqual(outcomes(viaProxyMode.stdout), outcomes(fromRender.stdout));

    const list = join(dir, 'list.nft');
    writeFileSync(list, NFT_LIST);
    const fromList = trace(
      ['--rules', list, '--rules-format', 'nft'],
      '10.244.0.5',
      '10.96.0.20:80',
      '--brief',
    );
    assert.equal(fromList.code, 0, fromList.stderr);
    assert.match(fromList.stdout, /100%\s+DNAT to 10\.244\.1\.2:8080 — Service default\/web:http/);

    // Read as iptables on request, the nft text is refused naming the file and line.
    const wrong = trace(
      ['--rules', list, '--rules-format', 'iptables'],
      '10.244.0.5',
      '10.96.0.20:80',
    );
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /list\.nft: line 1/);
    writeFileSync(list, 'add table ip t\nadd rule ip t missing accept\n');
    const refused = trace(['--rules', list], '10.244.0.5', '10.96.0.20:80');
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /list\.nft: nft -f would refuse operation 2 \(add rule ip t missing accept\)/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('svcnet trace -f --proxy-mode nftables: an unallocated ClusterIP inside a ServiceCIDR of the manifests is dropped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-nft-cidr-'));
  try {
    const manifests = join(dir, 'web.yaml');
    writeFileSync(
      manifests,
      `${MANIFESTS}---\napiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: kubernetes}\nspec: {cidrs: [10.96.0.0/16]}\n`,
    );
    const r = trace(['-f', manifests, '--proxy-mode', 'nftables'], '10.244.0.5', '10.96.0.99:80');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\[1\] 100%\s+DROPPED/);
    assert.match(r.stdout, /cluster-ips-check #2: DROP/);
    assert.match(r.stdout, /Drop traffic to unallocated ClusterIPs/);
    // Outside the ServiceCIDR nothing of kube-proxy's stops it.
    const outside = trace(
      ['-f', manifests, '--proxy-mode', 'nftables'],
      '10.244.0.5',
      '10.97.0.1:80',
    );
    assert.equal(outside.code, 0, outside.stderr);
    assert.doesNotMatch(outside.stdout, /DROPPED/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const IPVS_BUNDLE = `-A -t 10.102.97.154:80 -s wrr
-a -t 10.102.97.154:80 -r 192.168.76.141:80 -m -w 3
-a -t 10.102.97.154:80 -r 192.168.76.142:80 -m -w 1
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.102.97.154,tcp:80
*nat
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000
COMMIT
`;

test('trace --rules reads an IPVS bundle (detected or --rules-format ipvs): wrr 3:1', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-ipvs-'));
  try {
    const file = join(dir, 'node.txt');
    writeFileSync(file, IPVS_BUNDLE);
    for (const extra of [[], ['--rules-format', 'ipvs']]) {
      const r = trace(['--rules', file, ...extra], '10.244.0.5', '10.102.97.154:80', '--json');
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as { outcomes: { dnat: string; probability: number }[] };
      assert.deepEqual(
        out.outcomes.map((o) => [o.dnat, o.probability]),
        [
          ['192.168.76.141:80', 0.75],
          ['192.168.76.142:80', 0.25],
        ],
      );
    }
    writeFileSync(file, `${IPVS_BUNDLE}add KUBE-CLUSTER-IP nonsense\n`);
    const bad = trace(['--rules', file], '10.244.0.5', '10.102.97.154:80');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /node\.txt: line 13/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trace -f --proxy-mode ipvs follows the IPVS planner: NodePort masqueraded, named', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-ipvs-f-'));
  try {
    const file = join(dir, 'web.yaml');
    writeFileSync(
      file,
      MANIFESTS.replace(
        'ports: [{name: http, port: 80,',
        'type: NodePort\n  ports: [{name: http, port: 80, nodePort: 30080,',
      ),
    );
    const r = trace(
      ['-f', file, '--proxy-mode', 'ipvs'],
      '203.0.113.5',
      '172.18.0.2:30080',
      '--json',
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      outcomes: { probability: number; masquerade: boolean; servicePort?: string }[];
    };
    assert.ok(out.outcomes.length > 0);
    for (const o of out.outcomes) {
      assert.equal(o.masquerade, true);
      assert.equal(o.servicePort, 'default/web:http');
    }
    const total = out.outcomes.reduce((a, o) => a + o.probability, 0);
    assert.equal(Number(total.toFixed(6)), 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('trace --rules reads what `svcnet render --mode ipvs` prints (detected)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcnet-trace-ipvs-render-'));
  try {
    const manifests = join(dir, 'web.yaml');
    writeFileSync(manifests, MANIFESTS);
    const rendered = svcnet(['render', '--mode', 'ipvs', '-f', manifests]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const rules = join(dir, 'node.txt');
    writeFileSync(rules, rendered.stdout);
    const r = trace(['--rules', rules], '10.244.0.5', '10.96.0.20:80', '--json');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { outcomes: { dnat: string; probability: number }[] };
    assert.deepEqual(
      out.outcomes.map((o) => [o.dnat, o.probability]),
      [
        ['10.244.1.2:8080', 0.5],
        ['10.244.2.2:8080', 0.5],
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
