import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixturesDir } from '../../../test/conformance/harness.js';
import type { IpvsService, RealServer, VirtualServer, VirtualServerFlag } from './model.js';
import { parseList, parseRestore, parseSave } from './parse.js';
import {
  listingOrder,
  renderList,
  renderListReal,
  renderListService,
  renderSave,
  renderSaveReal,
  renderSaveService,
} from './render.js';

interface VectorFile {
  exampleState: {
    protocol: string;
    address: string;
    port: number;
    scheduler: string;
    schedFlags: string[];
    persistentTimeout: number | null;
    realServers: (RealServer & { activeConn: number; inactConn: number })[];
  }[];
  exampleListOutput: string;
  exampleSaveOutput: string;
  lineVectors: {
    kind: 'service' | 'dest';
    input: Record<string, unknown>;
    list: string;
    save: string;
  }[];
}

const PATH = join(fixturesDir(), 'kube-proxy', 'ipvs', 'ipvsadm-format-vectors.json');
const vectors = existsSync(PATH)
  ? (JSON.parse(readFileSync(PATH, 'utf8')) as VectorFile)
  : undefined;

const SCHED: Record<string, VirtualServerFlag> = {
  'mh-port': 'schedFlag2',
  'sh-port': 'schedFlag2',
};
const INPUT_FLAG: Record<string, VirtualServerFlag> = {
  persistent: 'persistent',
  'sourceHash(0x10)': 'schedFlag2',
};

function exampleServices(v: VectorFile): IpvsService[] {
  return v.exampleState.map((s) => ({
    virtualServer: {
      protocol: s.protocol.toLowerCase() as VirtualServer['protocol'],
      address: s.address,
      port: s.port,
      scheduler: s.scheduler,
      flags: [
        ...(s.persistentTimeout !== null ? (['persistent'] as const) : []),
        ...s.schedFlags.map((f) => SCHED[f]!),
      ],
      ...(s.persistentTimeout !== null ? { timeoutSeconds: s.persistentTimeout } : {}),
    },
    realServers: s.realServers,
  }));
}

test('ipvsadm -L -n and -S -n of the example state match the vectors byte for byte', (t) => {
  if (!vectors) {
    t.skip('fixtures absent');
    return;
  }
  const services = exampleServices(vectors);
  assert.equal(renderList(services), vectors.exampleListOutput);
  assert.equal(renderSave(services), vectors.exampleSaveOutput);
});

test('the example list and save outputs parse back into the example state', (t) => {
  if (!vectors) {
    t.skip('fixtures absent');
    return;
  }
  const services = exampleServices(vectors);
  const listed = parseList(vectors.exampleListOutput);
  assert.equal(listed.version, '1.2.1');
  assert.equal(listed.size, 4096);
  assert.deepEqual(listed.services, services);
  const saved = parseSave(vectors.exampleSaveOutput);
  assert.equal(renderSave(saved), vectors.exampleSaveOutput);
  const bare = listingOrder(services).map((s) => ({
    virtualServer: s.virtualServer,
    realServers: s.realServers.map(({ address, port, weight, forward }) => ({
      address,
      port,
      weight,
      forward,
    })),
  }));
  assert.deepEqual(listingOrder(saved), bare);
});

test('every line vector renders and parses both ways', (t) => {
  if (!vectors) {
    t.skip('fixtures absent');
    return;
  }
  for (const v of vectors.lineVectors) {
    const save = parseRestore(v.save)[0]!;
    if (v.kind === 'service') {
      const i = v.input as {
        protocol: string;
        address: string;
        port: number;
        scheduler: string;
        flags?: string[];
        timeout?: number;
      };
      const vs: VirtualServer = {
        protocol: i.protocol.toLowerCase() as VirtualServer['protocol'],
        address: i.address,
        port: i.port,
        scheduler: i.scheduler,
        flags: (i.flags ?? []).map((f) => INPUT_FLAG[f]!),
        ...(i.timeout !== undefined ? { timeoutSeconds: i.timeout } : {}),
      };
      assert.equal(renderListService(vs), v.list);
      assert.equal(renderSaveService(vs), v.save);
      assert.deepEqual(save, { verb: 'addService', virtualServer: vs });
      assert.deepEqual(parseList(v.list).services[0]!.virtualServer, vs);
    } else {
      const i = v.input as unknown as RealServer & { activeConn: number; inactConn: number };
      const rs: RealServer = {
        address: i.address,
        port: i.port,
        weight: i.weight,
        forward: i.forward,
        activeConn: i.activeConn,
        inactConn: i.inactConn,
      };
      assert.equal(renderListReal(rs), v.list);
      assert.ok(save.verb === 'addReal');
      assert.equal(renderSaveReal(save.id, rs), v.save);
      assert.deepEqual(save.realServer, {
        address: rs.address,
        port: rs.port,
        weight: rs.weight,
        forward: rs.forward,
      });
      const text = `TCP  1.1.1.1:1 rr\n${v.list}\n`;
      assert.deepEqual(parseList(text).services[0]!.realServers[0], rs);
    }
  }
});
