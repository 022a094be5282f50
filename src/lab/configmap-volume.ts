// ConfigMap volumes of a lab Pod, laid out as the kubelet lays them out: the volume's directory
// (`<root>/<pod uid>/volumes/kubernetes.io~configmap/<volume>`) holds a timestamped directory
// `..2006_01_02_15_04_05.NNNN` with the files, a `..data` symlink to it, and one symlink per
// top-level file name through `..data` (`config.conf -> ..data/config.conf`). An update writes
// a new timestamped directory and renames a fresh `..data` symlink over the old one, so a
// reader sees the old files or the new ones, never a mix (the atomic swap kube-proxy's config
// watcher and CoreDNS's reload rely on); then it adds or drops the top-level links and removes
// the old directory. The lab has no mount namespaces for hostNetwork Pods, so a container
// reads its mounts through path rewriting: an argument naming a path under a configMap
// volume's mountPath (`/var/lib/kube-proxy/config.conf`, or `--config=...`) is rewritten to
// the same path under the volume's directory. The projection and the rewriting are pure; the
// writer touches only the volume directory it is given.

import {
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, posix } from 'node:path';
import type { ConfigMap, Container, Pod, Volume } from '../kube/types.js';

export const DATA_LINK = '..data';
const VOLUME_PLUGIN = 'kubernetes.io~configmap';

/** A Pod volume backed by a ConfigMap. */
export interface ConfigMapVolume {
  readonly volume: string;
  readonly configMap: string;
  readonly items?: readonly { readonly key: string; readonly path: string }[];
  readonly optional: boolean;
}

export function configMapVolumes(pod: Pod): ConfigMapVolume[] {
  return (pod.spec?.volumes ?? []).flatMap((v: Volume) =>
    v.configMap === undefined
      ? []
      : [
          {
            volume: v.name,
            configMap: v.configMap.name,
            ...(v.configMap.items === undefined ? {} : { items: v.configMap.items }),
            optional: v.configMap.optional === true,
          },
        ],
  );
}

/** The directory a Pod's configMap volume is materialised in, under the node's pods root. */
export function volumeDir(root: string, pod: Pod, volume: string): string {
  return join(root, pod.metadata?.uid ?? '', 'volumes', VOLUME_PLUGIN, volume);
}

/** The Pod's directory under the pods root (removed with the Pod). */
export function podVolumesRoot(root: string, pod: Pod): string {
  return join(root, pod.metadata?.uid ?? '');
}

/**
 * The files a ConfigMap projects into a volume: every data key, or just `items` (key → path).
 * A missing key is an error naming the ConfigMap and key, as the kubelet's.
 */
export function projectFiles(
  cm: ConfigMap,
  vol: Pick<ConfigMapVolume, 'items' | 'configMap' | 'optional'>,
): Map<string, string> {
  const data = cm.data ?? {};
  const binary = cm.binaryData ?? {};
  const value = (key: string): string | undefined =>
    data[key] ??
    (binary[key] === undefined ? undefined : Buffer.from(binary[key], 'base64').toString('binary'));
  const files = new Map<string, string>();
  if (vol.items === undefined) {
    for (const key of [...Object.keys(data), ...Object.keys(binary)])
      files.set(key, value(key) ?? '');
    return files;
  }
  for (const item of vol.items) {
    const v = value(item.key);
    if (v === undefined) {
      if (vol.optional) continue;
      throw new Error(
        `configmap ${cm.metadata?.namespace ?? 'default'}/${vol.configMap}: items: key ${JSON.stringify(item.key)} not found`,
      );
    }
    const path = posix.normalize(item.path);
    if (path.startsWith('..') || posix.isAbsolute(path))
      throw new Error(
        `configmap volume ${vol.configMap}: items: path ${JSON.stringify(item.path)} leaves the volume`,
      );
    files.set(path, v);
  }
  return files;
}

/** The files `..data` currently holds, or undefined when the volume was never written. */
function currentFiles(dir: string): Map<string, string> | undefined {
  let target: string;
  try {
    target = readlinkSync(join(dir, DATA_LINK));
  } catch {
    return undefined;
  }
  const files = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(dir, target, rel), { withFileTypes: true })) {
      const p = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else files.set(p, readFileSync(join(dir, target, p), 'binary'));
    }
  };
  try {
    walk('');
  } catch {
    return undefined;
  }
  return files;
}

function sameFiles(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

/** The kubelet's timestamped directory name: `..2006_01_02_15_04_05.<unique>`. */
export function timestampedName(now: Date, unique: string): string {
  const iso = now.toISOString(); // 2006-01-02T15:04:05.000Z
  const stamp = `${iso.slice(0, 10)}_${iso.slice(11, 19)}`.replace(/[-:T]/g, '_');
  return `..${stamp}.${unique}`;
}

let sequence = 0;

/**
 * Writes `files` into the volume directory with the atomic `..data` swap. Returns false, and
 * writes nothing, when the volume already holds exactly these files.
 */
export function writeVolume(
  dir: string,
  files: ReadonlyMap<string, string>,
  now = new Date(),
): boolean {
  mkdirSync(dir, { recursive: true });
  const before = currentFiles(dir);
  if (before !== undefined && sameFiles(before, files)) return false;
  let old: string | undefined;
  try {
    old = readlinkSync(join(dir, DATA_LINK));
  } catch {
    old = undefined;
  }
  sequence += 1;
  const ts = timestampedName(now, `${String(process.pid)}${String(sequence).padStart(4, '0')}`);
  for (const [path, content] of files) {
    const file = join(dir, ts, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content, { encoding: 'binary', mode: 0o644 });
  }
  mkdirSync(join(dir, ts), { recursive: true });
  const tmp = join(dir, `${DATA_LINK}_tmp`);
  rmSync(tmp, { force: true });
  symlinkSync(ts, tmp);
  renameSync(tmp, join(dir, DATA_LINK));
  // The user-visible names: one link per top-level entry, through ..data.
  const top = new Set([...files.keys()].map((p) => p.split('/')[0] ?? p));
  for (const name of top) {
    try {
      readlinkSync(join(dir, name));
    } catch {
      symlinkSync(join(DATA_LINK, name), join(dir, name));
    }
  }
  for (const name of readdirSync(dir))
    if (!name.startsWith('..') && !top.has(name)) rmSync(join(dir, name), { force: true });
  if (old !== undefined && old !== ts) rmSync(join(dir, old), { recursive: true, force: true });
  return true;
}

/** A container's mount of a configMap volume: where it asks for it, and where it is. */
export interface MountRewrite {
  readonly mountPath: string;
  readonly dir: string;
}

/** The container's configMap mounts (subPath mounts map to the file itself). */
export function containerMounts(root: string, pod: Pod, c: Container): MountRewrite[] {
  const vols = new Set(configMapVolumes(pod).map((v) => v.volume));
  return (c.volumeMounts ?? [])
    .filter((m) => vols.has(m.name))
    .map((m) => ({
      mountPath: posix.normalize(m.mountPath).replace(/(.)\/$/, '$1'),
      dir:
        m.subPath === undefined || m.subPath === ''
          ? volumeDir(root, pod, m.name)
          : join(volumeDir(root, pod, m.name), m.subPath),
    }));
}

function rewritePath(path: string, mounts: readonly MountRewrite[]): string {
  // The longest mountPath that holds the path wins, as nested mounts shadow their parents.
  const m = [...mounts]
    .sort((a, b) => b.mountPath.length - a.mountPath.length)
    .find((x) => path === x.mountPath || path.startsWith(`${x.mountPath}/`));
  return m === undefined ? path : `${m.dir}${path.slice(m.mountPath.length)}`;
}

/** An argument with any path under a mount (whole, or after `--flag=`) rewritten to its volume. */
export function rewriteArg(arg: string, mounts: readonly MountRewrite[]): string {
  if (mounts.length === 0) return arg;
  if (arg.startsWith('/')) return rewritePath(arg, mounts);
  const eq = arg.indexOf('=');
  if (arg.startsWith('-') && eq > 0 && arg[eq + 1] === '/')
    return `${arg.slice(0, eq + 1)}${rewritePath(arg.slice(eq + 1), mounts)}`;
  return arg;
}
