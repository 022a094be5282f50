import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../kube/types.js';
import {
  DATA_LINK,
  containerMounts,
  projectFiles,
  rewriteArg,
  timestampedName,
  volumeDir,
  writeVolume,
} from './configmap-volume.js';

const pod: Pod = {
  metadata: { name: 'kube-proxy-x', namespace: 'kube-system', uid: 'u1' },
  spec: {
    containers: [
      {
        name: 'kube-proxy',
        volumeMounts: [
          { name: 'kube-proxy', mountPath: '/var/lib/kube-proxy' },
          { name: 'xtables-lock', mountPath: '/run/xtables.lock' },
        ],
      },
    ],
    volumes: [
      { name: 'kube-proxy', configMap: { name: 'kube-proxy' } },
      { name: 'xtables-lock', hostPath: { path: '/run/xtables.lock' } },
    ],
  },
};

test('a configMap volume has the kubelet layout: ..data to a timestamped dir, files through ..data', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cmvol-'));
  t.after(() => {
    rmSync(root, { recursive: true, force: true });
  });
  const dir = volumeDir(root, pod, 'kube-proxy');
  assert.equal(dir, join(root, 'u1', 'volumes', 'kubernetes.io~configmap', 'kube-proxy'));
  assert.equal(writeVolume(dir, new Map([['config.conf', 'mode: iptables\n']])), true);
  assert.equal(readlinkSync(join(dir, 'config.conf')), join(DATA_LINK, 'config.conf'));
  const first = readlinkSync(join(dir, DATA_LINK));
  assert.match(first, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
  assert.equal(readFileSync(join(dir, 'config.conf'), 'utf8'), 'mode: iptables\n');
  // The same content writes nothing.
  assert.equal(writeVolume(dir, new Map([['config.conf', 'mode: iptables\n']])), false);
  assert.equal(readlinkSync(join(dir, DATA_LINK)), first);
  // New content: a new dir, ..data swapped, the old dir gone, a dropped key's link gone.
  assert.equal(
    writeVolume(
      dir,
      new Map([
        ['config.conf', 'mode: nftables\n'],
        ['extra', 'x'],
      ]),
    ),
    true,
  );
  assert.equal(writeVolume(dir, new Map([['config.conf', 'mode: nftables\n']])), true);
  const second = readlinkSync(join(dir, DATA_LINK));
  assert.notEqual(second, first);
  assert.equal(readFileSync(join(dir, 'config.conf'), 'utf8'), 'mode: nftables\n');
  assert.deepEqual(readdirSync(dir).sort(), [DATA_LINK, second, 'config.conf'].sort());
});

test('items project chosen keys to paths; a missing key is an error naming it unless optional', () => {
  const cm = {
    metadata: { name: 'coredns', namespace: 'kube-system' },
    data: { Corefile: '.:53 {}', x: '1' },
  };
  assert.deepEqual(
    [
      ...projectFiles(cm, {
        configMap: 'coredns',
        optional: false,
        items: [{ key: 'Corefile', path: 'Corefile' }],
      }),
    ],
    [['Corefile', '.:53 {}']],
  );
  assert.deepEqual([...projectFiles(cm, { configMap: 'coredns', optional: false })].length, 2);
  assert.throws(
    () =>
      projectFiles(cm, {
        configMap: 'coredns',
        optional: false,
        items: [{ key: 'nope', path: 'a' }],
      }),
    /configmap kube-system\/coredns: items: key "nope" not found/,
  );
  assert.throws(
    () =>
      projectFiles(cm, {
        configMap: 'coredns',
        optional: false,
        items: [{ key: 'x', path: '../a' }],
      }),
    /leaves the volume/,
  );
});

test('paths under a configMap mountPath are rewritten to the volume; other args stay', () => {
  const mounts = containerMounts('/lab/volumes', pod, pod.spec!.containers[0]!);
  const dir = '/lab/volumes/u1/volumes/kubernetes.io~configmap/kube-proxy';
  assert.deepEqual(mounts, [{ mountPath: '/var/lib/kube-proxy', dir }]);
  assert.equal(rewriteArg('/var/lib/kube-proxy/config.conf', mounts), `${dir}/config.conf`);
  assert.equal(
    rewriteArg('--config=/var/lib/kube-proxy/config.conf', mounts),
    `--config=${dir}/config.conf`,
  );
  assert.equal(
    rewriteArg('/var/lib/kube-proxyx/config.conf', mounts),
    '/var/lib/kube-proxyx/config.conf',
  );
  assert.equal(rewriteArg('/run/xtables.lock', mounts), '/run/xtables.lock');
  assert.equal(rewriteArg('proxy', mounts), 'proxy');
});

test('the timestamped directory name is the kubelet format', () => {
  assert.equal(
    timestampedName(new Date('2026-11-27T19:05:06.789Z'), '42'),
    '..2026_11_27_19_05_06.42',
  );
});
