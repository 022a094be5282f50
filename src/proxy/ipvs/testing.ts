// Test support of the IPVS proxier's unit tests (proxier.test.ts, proxier-partial.test.ts):
// a FakeIpvsKernel whose real servers report a chosen connection count, an IpvsProxier wired
// to Fakes, and readers of what the Fakes hold. Test code only: nothing at run time imports it.

import { endpoint, slice } from '../../kube/testing.js';
import type { EndpointSlice } from '../../kube/types.js';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import { FakeIpset } from '../../netfilter/ipset/fake.js';
import { FakeIpvs } from '../../netfilter/ipvs/fake.js';
import type { IpvsService, VirtualServerId } from '../../netfilter/ipvs/model.js';
import { renderSave } from '../../netfilter/ipvs/render.js';
import { FakeIp } from '../../os/ip.js';
import { TEST_NODE, baseDeps, proxierFakes, startProxier } from '../testing.js';
import { FakeIpvsKernel } from './kernel.js';
import { IPVS_DUMMY_DEVICE } from './names.js';
import { DEFAULT_IPVS_OPTIONS } from './options.js';
import type { IpvsProxierOptions } from './options.js';
import { IpvsProxier } from './proxier.js';

/** FakeIpvsKernel whose real servers report `conns` active connections (the Fake has none). */
export class ConnKernel extends FakeIpvsKernel {
  conns = 0;
  /** Makes the next applyIpvs throw (a refused `ipvsadm -R`). */
  failNextIpvs = false;

  private counted(list: IpvsService[]): IpvsService[] {
    return list.map((s) => ({
      virtualServer: s.virtualServer,
      realServers: s.realServers.map((rs) => ({ ...rs, activeConn: this.conns })),
    }));
  }

  override async readIpvs(): Promise<IpvsService[]> {
    return this.counted(await super.readIpvs());
  }

  override async readConnections(ids: readonly VirtualServerId[]): Promise<IpvsService[]> {
    return this.counted(await super.readConnections(ids));
  }

  override async applyIpvs(ops: Parameters<FakeIpvsKernel['applyIpvs']>[0]): Promise<void> {
    if (this.failNextIpvs) {
      this.failNextIpvs = false;
      throw new Error('ipvsadm -R refused');
    }
    await super.applyIpvs(ops);
  }
}

/**
 * An IpvsProxier on Fakes, started (not synced); `fullSyncPeriodMs` as in baseDeps; `options`
 * over DEFAULT_IPVS_OPTIONS (a function is called at every sync).
 */
export function setupIpvs(
  opts: {
    fullSyncPeriodMs?: number;
    options?: Partial<IpvsProxierOptions> | (() => Partial<IpvsProxierOptions>);
  } = {},
) {
  const f = proxierFakes();
  const ipvs = new FakeIpvs();
  const ipset = new FakeIpset();
  const iptables = new FakeIptables('IPv4');
  const ip = new FakeIp();
  const kernel = new ConnKernel('IPv4', ipvs, ipset, iptables);
  const proxier = new IpvsProxier({
    ...baseDeps(f, opts.fullSyncPeriodMs),
    ip,
    families: [{ family: 'IPv4', kernel }],
    optionsFor: () => ({
      ...DEFAULT_IPVS_OPTIONS,
      nodeName: TEST_NODE,
      ...(typeof opts.options === 'function' ? opts.options() : opts.options),
    }),
  });
  const reports = startProxier(proxier, f);
  const dummyAddrs = async (): Promise<string[]> =>
    (await ip.links(undefined))
      .find((l) => l.name === IPVS_DUMMY_DEVICE)
      ?.addrs.map((a) => a.local)
      .sort() ?? [];
  const reals = (): string[] =>
    [...ipvs.state().values()].flatMap((s) =>
      s.realServers.map(
        (r) =>
          `${s.virtualServer.address}:${s.virtualServer.port} -> ${r.address}:${r.port} w${r.weight}`,
      ),
    );
  /** Everything the Fakes hold, as text: compare two proxiers' kernels with it. */
  const kernelText = async (): Promise<string> =>
    [
      renderSave([...ipvs.state().values()]),
      ipset.save(),
      await iptables.save('nat'),
      await iptables.save('filter'),
      (await dummyAddrs()).join(' '),
    ].join('\n---\n');
  return { f, proxier, ipvs, ipset, iptables, ip, kernel, reports, dummyAddrs, reals, kernelText };
}

/** Slice of ns/NAME, port p 8080: `ready` endpoints ready, `terminating` ones serving-terminating. */
export function slice2(name: string, ready: string[], terminating: string[] = []): EndpointSlice {
  return slice(
    `ns/${name}`,
    [
      ...ready.map((ip) => endpoint(ip, { conditions: { ready: true }, nodeName: TEST_NODE })),
      ...terminating.map((ip) =>
        endpoint(ip, {
          conditions: { ready: false, serving: true, terminating: true },
          nodeName: TEST_NODE,
        }),
      ),
    ],
    { ports: [{ name: 'p', port: 8080, protocol: 'TCP' }] },
  );
}
