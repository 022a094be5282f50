// The bundled svcnet-cni binary, called directly as a runtime would (CNI_* env + stdin):
// VERSION, and bad input answered with the spec's error JSON on stdout and exit 1 —
// unknown cniVersion (1), missing env (4), bad JSON (6), bad subnet / missing ipam (7),
// missing netns (8), an exhausted range (999) — each with a message naming the problem.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RealExecer } from '../../src/os/exec.js';
import { cniSkipReason, NetnsLab, netnsPath, pluginDir, tempDir } from './lib/cni-lab.js';
import { skipOrFail } from './lib/prereq.js';

const skip = skipOrFail(cniSkipReason());

describe('svcnet-cni binary error contract', { skip }, () => {
  const execer = new RealExecer();
  const lab = new NetnsLab('err');
  let bin = '';
  let work: { dir: string; remove: () => Promise<void> };
  before(async () => {
    await lab.sweep();
    bin = await pluginDir();
    work = await tempDir('err');
  });
  after(async () => {
    await lab.cleanup();
    await work.remove();
    await rm(bin, { recursive: true, force: true });
  });

  async function run(
    env: Record<string, string>,
    stdin: unknown,
    hostNs?: string,
  ): Promise<{ code: number; out: Record<string, unknown> | undefined }> {
    const full = {
      CNI_CONTAINERID: '',
      CNI_NETNS: '',
      CNI_IFNAME: '',
      CNI_ARGS: '',
      CNI_PATH: bin,
      ...env,
    };
    const argv = hostNs ? ['--net=' + netnsPath(hostNs), join(bin, 'svcnet-cni')] : [];
    const res = await execer.run({
      cmd: hostNs ? 'nsenter' : join(bin, 'svcnet-cni'),
      args: argv,
      env: full,
      stdin: typeof stdin === 'string' ? stdin : JSON.stringify(stdin),
    });
    const text = res.stdout.trim();
    return {
      code: res.code,
      out: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>),
    };
  }

  const ipam = (subnet: string): unknown => ({
    type: 'host-local',
    ranges: [[{ subnet }]],
    dataDir: join(work.dir, 'ipam'),
  });

  test('VERSION', async () => {
    const r = await run({ CNI_COMMAND: 'VERSION' }, { cniVersion: '1.1.0' });
    assert.equal(r.code, 0);
    assert.deepEqual(r.out, {
      cniVersion: '1.1.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });

  test('bad input gives the spec codes', async () => {
    const add = {
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/run/netns/x',
      CNI_IFNAME: 'eth0',
    };
    const cases: [string, Record<string, string>, unknown, number, RegExp][] = [
      [
        'unknown cniVersion',
        add,
        { cniVersion: '9.9.9', name: 'n', type: 'svcnet-cni', ipam: ipam('10.9.0.0/24') },
        1,
        /incompatible CNI versions: config is "9\.9\.9"/,
      ],
      ['missing env', { CNI_COMMAND: 'ADD' }, {}, 4, /CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME/],
      ['bad JSON', add, 'not json', 6, /cannot decode JSON/],
      [
        'bad subnet',
        add,
        { cniVersion: '1.0.0', name: 'n', type: 'svcnet-cni', ipam: ipam('10.9.0.300/24') },
        7,
        /ipam\.ranges\[0\]\[0\]\.subnet: not a CIDR: "10\.9\.0\.300\/24"/,
      ],
      [
        'missing ipam',
        add,
        { cniVersion: '1.0.0', name: 'n', type: 'svcnet-cni' },
        7,
        /network "n": ipam: required/,
      ],
      [
        'missing netns',
        add,
        { cniVersion: '1.0.0', name: 'n', type: 'svcnet-cni', ipam: ipam('10.9.0.0/24') },
        8,
        /CNI_NETNS \/run\/netns\/x does not exist/,
      ],
    ];
    for (const [what, env, stdin, code, msg] of cases) {
      const r = await run(env, stdin);
      assert.equal(r.code, 1, what);
      assert.equal(r.out?.code, code, `${what}: ${JSON.stringify(r.out)}`);
      assert.match(String(r.out.msg), msg, what);
    }
  });

  test('an exhausted range answers 999 and leaves the first Pod alone', async () => {
    const node = await lab.add('node');
    const p1 = await lab.add('p1');
    const p2 = await lab.add('p2');
    const cfg = {
      cniVersion: '1.0.0',
      name: 'tiny',
      type: 'svcnet-cni',
      ipam: ipam('10.99.0.0/30'),
    };
    const a1 = await run(
      { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'a1', CNI_NETNS: netnsPath(p1), CNI_IFNAME: 'eth0' },
      cfg,
      node,
    );
    assert.equal(a1.code, 0, JSON.stringify(a1.out));
    assert.equal((a1.out?.ips as { address: string }[])[0]?.address, '10.99.0.2/30');
    const a2 = await run(
      { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'a2', CNI_NETNS: netnsPath(p2), CNI_IFNAME: 'eth0' },
      cfg,
      node,
    );
    assert.equal(a2.code, 1);
    assert.equal(a2.out?.code, 999);
    assert.match(
      String(a2.out.msg),
      /no IP addresses available in range set 0 \(10\.99\.0\.1-10\.99\.0\.2\)/,
    );
    assert.doesNotMatch(
      await lab.ip(p2, '-o', 'link', 'show'),
      /eth0/,
      'failed ADD left nothing in the Pod',
    );
    const st = await run({ CNI_COMMAND: 'STATUS' }, { ...cfg, cniVersion: '1.1.0' }, node);
    assert.equal(st.out?.code, 50, 'STATUS reports not available while exhausted');
    const del = await run(
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'a1', CNI_NETNS: netnsPath(p1), CNI_IFNAME: 'eth0' },
      cfg,
      node,
    );
    assert.equal(del.code, 0);
    const st2 = await run({ CNI_COMMAND: 'STATUS' }, { ...cfg, cniVersion: '1.1.0' }, node);
    assert.equal(st2.code, 0);
  });
});
