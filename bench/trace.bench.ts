// How fast `svcnet trace` answers on a big node: rules for N ClusterIP Services with 3
// endpoints each (plus a NodePort each), rendered by our iptables planner and rendered to
// text, then parsed and traced. Prints parse time, the first trace (which compiles the rules
// it meets) and the median of later traces, for the first and the last Service in
// KUBE-SERVICES (the walk is linear in that chain, as the kernel's is). The ruleset is
// prepared once; later traces reuse the rules compiled by earlier ones.

import { performance } from 'node:perf_hooks';
import type { EndpointSlice, Service } from '../src/kube/types.js';
import { parseDocument } from '../src/netfilter/iptables/parse.js';
import { renderDocument } from '../src/netfilter/iptables/render.js';
import { DEFAULT_OPTIONS } from '../src/proxy/iptables/options.js';
import { planFromObjects } from '../src/proxy/iptables/plan-objects.js';
import { defaultContext, parsePacketSpec } from '../src/trace/packet.js';
import { prepareRuleset, tracePacket } from '../src/trace/walk.js';
import { parseIP } from '../src/util/ip.js';

function ipOf(base: number, i: number): string {
  const v = base + i;
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

function rulesFor(n: number): string {
  const services: Service[] = [];
  const slices: EndpointSlice[] = [];
  for (let i = 0; i < n; i++) {
    services.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: 'bench', name: `svc${i}` },
      spec: {
        type: 'NodePort',
        clusterIP: ipOf(0x0a600000, i),
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30000 + (i % 2000) }],
      },
    });
    slices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        namespace: 'bench',
        name: `svc${i}-1`,
        labels: { 'kubernetes.io/service-name': `svc${i}` },
      },
      addressType: 'IPv4',
      endpoints: [0, 1, 2].map((k) => ({
        addresses: [ipOf(0x0af40000, i * 3 + k)],
        nodeName: k === 0 ? 'node-1' : 'node-2',
      })),
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
  }
  const options = {
    ...DEFAULT_OPTIONS,
    nodeName: 'node-1',
    nodeIP: '172.18.0.2',
    localDetector: { mode: 'ClusterCIDR', cidr: '10.244.0.0/16' } as const,
    localAddresses: ['127.0.0.1/8', '172.18.0.2/16'],
  };
  return renderDocument(planFromObjects(services, slices, options, 'IPv4').plan.document);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

export async function run(): Promise<void> {
  const node = parseIP('172.18.0.2');
  if (!node) throw new Error('bad node IP');
  for (const n of [1000, 10000]) {
    const text = rulesFor(n);
    let t = performance.now();
    const doc = parseDocument(text);
    const parseMs = performance.now() - t;
    t = performance.now();
    const prepared = prepareRuleset(doc);
    const prepareMs = performance.now() - t;
    const lines = text.split('\n').length;
    const report: string[] = [];
    for (const [label, i] of [
      ['first', 0],
      ['last', n - 1],
    ] as const) {
      const packet = parsePacketSpec({ src: '10.244.1.9', dst: `${ipOf(0x0a600000, i)}:80` });
      const ctx = defaultContext('pod', [node]);
      t = performance.now();
      const first = tracePacket(prepared, packet, ctx);
      const firstMs = performance.now() - t;
      const times: number[] = [];
      for (let k = 0; k < 9; k++) {
        t = performance.now();
        tracePacket(prepared, packet, ctx);
        times.push(performance.now() - t);
      }
      if (first.outcomes.length !== 3)
        throw new Error(`expected 3 outcomes, got ${first.outcomes.length}`);
      report.push(
        `${label} service: first trace ${firstMs.toFixed(1)} ms, then median ${median(times).toFixed(1)} ms`,
      );
    }
    process.stdout.write(
      `${n} services (${lines} lines): parse ${parseMs.toFixed(0)} ms, prepare ${prepareMs.toFixed(0)} ms; ${report.join('; ')}\n`,
    );
  }
  await Promise.resolve();
}
