import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ExecRequest, ExecResult, Execer } from '../../os/exec.js';
import { ValidationError } from '../../errors.js';
import type { InProcessPlugin } from '../invoke.js';
import { CniError, type CniResult } from '../types.js';
import { MemoryResultCache } from './cache.js';
import { buildPluginConfig, convertResult, parseConflist } from './parse-conflist.js';
import { CniRuntime, type Attachment } from './runtime.js';

interface Call {
  plugin: string;
  command: string;
  env: Readonly<Record<string, string>>;
  config: Record<string, unknown>;
  cmd: string;
  args: readonly string[];
}

/** Simulated plugins: `link` creates eth0, `chain` passes prevResult through, `old` speaks ≤1.0.0. */
class PluginSim implements Execer {
  readonly calls: Call[] = [];
  failAdd = '';

  /** The calls of one CNI command, in order. */
  callsOf(command: string): Call[] {
    return this.calls.filter((c) => c.command === command);
  }

  /** The plugins that got one CNI command, in order. */
  pluginsOf(command: string): string[] {
    return this.callsOf(command).map((c) => c.plugin);
  }

  run(req: ExecRequest): Promise<ExecResult> {
    const bin = [req.cmd, ...req.args].find((a) => a.startsWith('/cni/')) ?? '';
    const plugin = bin.slice('/cni/'.length);
    const env = req.env ?? {};
    const command = env.CNI_COMMAND ?? '';
    const config = JSON.parse(String(req.stdin)) as Record<string, unknown>;
    this.calls.push({ plugin, command, env, config, cmd: req.cmd, args: req.args });
    const ok = (stdout = ''): Promise<ExecResult> =>
      Promise.resolve({ code: 0, stdout, stderr: '' });
    if (command === 'VERSION')
      return ok(
        JSON.stringify({
          cniVersion: '1.0.0',
          supportedVersions:
            plugin === 'old' ? ['0.3.1', '0.4.0', '1.0.0'] : ['0.4.0', '1.0.0', '1.1.0'],
        }),
      );
    if (command === 'ADD' && plugin === this.failAdd)
      return Promise.resolve({
        code: 1,
        stdout: JSON.stringify({ code: 7, msg: 'bad thing' }),
        stderr: '',
      });
    if (command === 'ADD' && plugin === 'link')
      return ok(
        JSON.stringify({
          cniVersion: config.cniVersion,
          interfaces: [{ name: 'eth0', sandbox: env.CNI_NETNS }],
          ips: [{ interface: 0, address: '10.0.0.2/24' }],
        }),
      );
    if (command === 'ADD') return ok(JSON.stringify(config.prevResult));
    return ok();
  }
}

const find = (t: string): Promise<string> => Promise.resolve(`/cni/${t}`);

function setup(
  plugins: unknown[],
  extra: Record<string, unknown> = {},
): { rt: CniRuntime; sim: PluginSim; cache: MemoryResultCache; att: Attachment } {
  const sim = new PluginSim();
  const cache = new MemoryResultCache();
  const rt = new CniRuntime({ execer: sim, cniPath: ['/cni'], cache, findPlugin: find });
  const conflist = parseConflist(
    JSON.stringify({ cniVersion: '1.0.0', cniVersions: ['1.1.0'], name: 'net', plugins, ...extra }),
  );
  return {
    rt,
    sim,
    cache,
    att: {
      containerId: 'c1',
      netns: '/run/netns/p',
      ifName: 'eth0',
      conflist,
      args: { IgnoreUnknown: '1', K8S_POD_NAME: 'web' },
      capabilityArgs: { portMappings: [{ hostPort: 80 }] },
    },
  };
}

test('ADD chains in order with prevResult and runtimeConfig; DEL reverses with the cached result', async () => {
  const { rt, sim, cache, att } = setup([
    { type: 'link', extra: { keep: true } },
    { type: 'chain', capabilities: { portMappings: true, bandwidth: true } },
  ]);
  const result = await rt.add(att);
  assert.equal(
    result.cniVersion,
    '1.1.0',
    'highest version of cniVersions that both plugins report',
  );
  const adds = sim.callsOf('ADD');
  assert.deepEqual(sim.pluginsOf('ADD'), ['link', 'chain']);
  assert.deepEqual(adds[0]?.config, {
    type: 'link',
    extra: { keep: true },
    cniVersion: '1.1.0',
    name: 'net',
  });
  assert.deepEqual(adds[1]?.config.runtimeConfig, { portMappings: [{ hostPort: 80 }] });
  assert.equal(adds[1].config.capabilities, undefined);
  assert.deepEqual(adds[1].config.prevResult, result);
  assert.equal(adds[0].env.CNI_ARGS, 'IgnoreUnknown=1;K8S_POD_NAME=web');
  assert.equal(adds[0].env.CNI_PATH, '/cni');
  assert.equal((await cache.get('net', 'c1', 'eth0'))?.result.ips?.[0]?.address, '10.0.0.2/24');

  await rt.check(att);
  assert.deepEqual(sim.pluginsOf('CHECK'), ['link', 'chain']);
  assert.deepEqual(sim.callsOf('CHECK')[0]?.config.prevResult, result);

  await rt.del(att);
  assert.deepEqual(sim.pluginsOf('DEL'), ['chain', 'link']);
  assert.deepEqual(sim.callsOf('DEL')[0]?.config.prevResult, result);
  assert.equal(await cache.get('net', 'c1', 'eth0'), undefined);
  await rt.del(att);
  assert.equal(
    sim.callsOf('DEL').at(-1)?.config.prevResult,
    undefined,
    'second DEL has no cache: no prevResult',
  );
  await assert.rejects(rt.check(att), (e: unknown) => e instanceof CniError && e.cniCode === 3);
});

test('negotiation respects old plugins; a failed ADD is followed by DEL and keeps the plugin code', async () => {
  const { rt, sim, att } = setup([{ type: 'link' }, { type: 'old' }]);
  sim.failAdd = 'old';
  await assert.rejects(rt.add(att), (e: unknown) => {
    assert.ok(e instanceof CniError);
    assert.equal(e.cniCode, 7);
    assert.equal(e.message, 'network net: plugin old ADD (container c1): bad thing');
    return true;
  });
  assert.equal(sim.calls.find((c) => c.command === 'ADD')?.config.cniVersion, '1.0.0');
  assert.deepEqual(sim.pluginsOf('DEL'), ['old', 'link']);
});

test('hostNetns runs plugins through nsenter; bad attachments are refused before any plugin runs', async () => {
  const { rt, sim, att } = setup([{ type: 'link' }]);
  await rt.add({ ...att, hostNetns: '/run/netns/node1' });
  const add = sim.calls.find((c) => c.command === 'ADD');
  assert.equal(add?.cmd, 'nsenter');
  assert.deepEqual(add.args, ['--net=/run/netns/node1', '/cni/link']);
  const before = sim.calls.length;
  await assert.rejects(
    rt.add({ ...att, containerId: 'bad/id', ifName: 'this-name-is-too-long' }),
    (e: unknown) => e instanceof ValidationError && e.errors.length === 2,
  );
  assert.equal(sim.calls.length, before);
});

test('GC deletes stale cached attachments, then sends both attachment keys; STATUS and disableCheck', async () => {
  const { rt, sim, att } = setup([{ type: 'link' }], { cniVersion: '1.1.0' });
  await rt.add(att);
  await rt.add({ ...att, containerId: 'c2' });
  await rt.gc(att.conflist, [{ containerID: 'c2', ifname: 'eth0' }]);
  assert.deepEqual(
    sim.callsOf('DEL').map((c) => c.env.CNI_CONTAINERID),
    ['c1'],
  );
  const gc = sim.calls.find((c) => c.command === 'GC');
  assert.deepEqual(gc?.config['cni.dev/valid-attachments'], [
    { containerID: 'c2', ifname: 'eth0' },
  ]);
  assert.deepEqual(gc.config['cni.dev/attachments'], [{ containerID: 'c2', ifname: 'eth0' }]);
  assert.equal(gc.env.CNI_CONTAINERID, '', 'GC gets no container');
  await rt.status(att.conflist);
  assert.ok(sim.calls.some((c) => c.command === 'STATUS'));
  const off = setup([{ type: 'link' }], { disableCheck: 'true' });
  await off.rt.add(off.att);
  await off.rt.check(off.att);
  assert.ok(!off.sim.calls.some((c) => c.command === 'CHECK'));
});

test('conflist validation names every problem; legacy .conf is wrapped; results convert across versions', () => {
  assert.throws(
    () =>
      parseConflist(
        JSON.stringify({
          cniVersion: 'x',
          name: 'a b',
          plugins: [{ type: 'p', runtimeConfig: {} }, {}],
        }),
        '10-x.conflist',
      ),
    (e: unknown) => {
      assert.ok(e instanceof ValidationError);
      assert.deepEqual(
        e.errors.map((f) => f.field),
        ['name', 'cniVersion', 'plugins[0].runtimeConfig', 'plugins[1].type'],
      );
      assert.match(
        e.message,
        /network config 10-x\.conflist: plugins\[0\]\.runtimeConfig: is reserved/,
      );
      return true;
    },
  );
  const legacy = parseConflist(
    JSON.stringify({ cniVersion: '0.3.1', name: 'old', type: 'bridge', bridge: 'cni0' }),
  );
  assert.deepEqual(legacy.plugins, [{ type: 'bridge', bridge: 'cni0' }]);
  const r: CniResult = { cniVersion: '1.0.0', ips: [{ address: 'fd00::2/64' }] };
  assert.deepEqual(convertResult(r, '0.3.1').ips, [{ version: '6', address: 'fd00::2/64' }]);
  assert.deepEqual(convertResult(convertResult(r, '0.3.1'), '1.0.0'), r);
  assert.equal(
    buildPluginConfig({
      list: legacy,
      plugin: { type: 'x', capabilities: { mac: true } },
      cniVersion: '0.3.1',
    }).runtimeConfig,
    undefined,
  );
});

test('in-process plugins run as functions with the exec env and config; others, and any plugin in a node namespace, still exec', async () => {
  const sim = new PluginSim();
  const seen: { env: Readonly<Record<string, string>>; config: Record<string, unknown> }[] = [];
  const link: InProcessPlugin = (env, stdin) => {
    const config = JSON.parse(stdin) as Record<string, unknown>;
    seen.push({ env, config });
    const reply = (stdout: string, exitCode = 0): Promise<{ stdout: string; exitCode: number }> =>
      Promise.resolve({ stdout, exitCode });
    if (env.CNI_COMMAND === 'VERSION')
      return reply(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: ['1.0.0', '1.1.0'] }));
    if (env.CNI_COMMAND === 'ADD' && env.CNI_CONTAINERID === 'bad')
      return reply(JSON.stringify({ code: 11, msg: 'busy' }), 1);
    if (env.CNI_COMMAND === 'ADD')
      return reply(
        JSON.stringify({
          cniVersion: config.cniVersion,
          ips: [{ address: '10.0.0.9/24' }],
        }),
      );
    return reply('');
  };
  const rt = new CniRuntime({
    execer: sim,
    cniPath: ['/cni'],
    cache: new MemoryResultCache(),
    findPlugin: find,
    inProcess: new Map([['link', link]]),
  });
  const conflist = parseConflist(
    JSON.stringify({
      cniVersion: '1.1.0',
      name: 'net',
      plugins: [{ type: 'link' }, { type: 'chain' }],
    }),
  );
  const att: Attachment = { containerId: 'c1', netns: '/run/netns/p', ifName: 'eth0', conflist };
  const result = await rt.add(att);
  assert.equal(result.ips?.[0]?.address, '10.0.0.9/24');
  assert.deepEqual(sim.pluginsOf('ADD'), ['chain'], 'only the other plugin was executed');
  assert.deepEqual(sim.pluginsOf('VERSION'), ['chain']);
  const add = seen.find((s) => s.env.CNI_COMMAND === 'ADD');
  assert.deepEqual(add?.env, {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: 'c1',
    CNI_NETNS: '/run/netns/p',
    CNI_IFNAME: 'eth0',
    CNI_ARGS: '',
    CNI_PATH: '/cni',
  });
  assert.deepEqual(add.config, { type: 'link', cniVersion: '1.1.0', name: 'net' });
  await rt.del(att);
  assert.deepEqual(
    seen.map((s) => s.env.CNI_COMMAND),
    ['VERSION', 'ADD', 'DEL'],
  );
  await assert.rejects(
    rt.add({ ...att, containerId: 'bad' }),
    (e: unknown) =>
      e instanceof CniError &&
      e.cniCode === 11 &&
      /plugin link ADD \(container bad\): busy$/.test(e.message),
  );
  await rt.add({ ...att, containerId: 'c2', hostNetns: '/run/netns/node1' });
  assert.deepEqual(sim.callsOf('ADD').at(-2)?.args, ['--net=/run/netns/node1', '/cni/link']);
});
