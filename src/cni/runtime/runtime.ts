// The CNI runtime side (what containerd/CRI-O do with libcni): runs the plugins of a network
// configuration list for one attachment — ADD in order chaining prevResult, DEL in reverse
// with the cached result, CHECK, STATUS and GC — negotiates the spec version with each
// plugin's VERSION answer, caches the final ADD result, serialises operations per container
// and makes GC exclusive. Plugins run in the runtime's own namespace or, for the lab, in a
// node's namespace given per call (`hostNetns`, entered with nsenter). Works with svcnet-cni
// and the reference plugins alike. Plugin types given in `inProcess` (the lab gives
// svcnet-cni) run as functions in this process with the same config and result JSON, no
// exec, unless a node namespace is to be entered; every other type runs its binary.

import { ValidationError, type FieldError } from '../../errors.js';
import type { Execer } from '../../os/exec.js';
import {
  findPluginBinary,
  invokeInProcess,
  invokePlugin,
  type InProcessPlugin,
} from '../invoke.js';
import { parseResult } from '../parse-config.js';
import { invalidIfName, NAME_RE } from '../parse-request.js';
import { CniError, CniErrorCode, type CniAttachment, type CniResult } from '../types.js';
import { highestCommonVersion, versionAtLeast } from '../version.js';
import type { ResultCache } from './cache.js';
import {
  buildPluginConfig,
  convertResult,
  formatCniArgs,
  listVersions,
  RUNTIME_VERSIONS,
  type NetworkConfigList,
} from './parse-conflist.js';

export interface RuntimeOptions {
  readonly execer: Execer;
  /** Directories searched for plugin binaries (CNI_PATH). */
  readonly cniPath: readonly string[];
  readonly cache: ResultCache;
  readonly findPlugin?: (type: string, dirs: readonly string[]) => Promise<string>;
  /** Per plugin call; default 60 s. */
  readonly timeoutMs?: number;
  /** Plugin types run as functions in this process (no exec, no CNI_PATH lookup). */
  readonly inProcess?: ReadonlyMap<string, InProcessPlugin>;
}

/** One attachment of a container to a network. */
export interface Attachment {
  readonly containerId: string;
  /** Netns path of the Pod; may be empty for DEL when the namespace is gone. */
  readonly netns: string;
  readonly ifName: string;
  readonly conflist: NetworkConfigList;
  /** CNI_ARGS, e.g. {IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web-0'}. */
  readonly args?: Readonly<Record<string, string>>;
  /** Capability args (portMappings, ipRanges, dns, mac, …) offered to plugins that enable them. */
  readonly capabilityArgs?: Readonly<Record<string, unknown>>;
  /** Run the plugins inside this network namespace (path), e.g. a lab node; default: ours. */
  readonly hostNetns?: string;
}

export interface ListOptions {
  readonly hostNetns?: string;
}

/** Runs CNI plugin lists; see the file header. */
export class CniRuntime {
  private readonly opts: RuntimeOptions;
  private readonly versions = new Map<string, Promise<readonly string[]>>();
  private readonly perContainer = new Map<string, Promise<unknown>>();
  private inflight = 0;
  private drained: (() => void) | undefined;
  private gcGate: Promise<void> | undefined;

  constructor(opts: RuntimeOptions) {
    this.opts = opts;
  }

  /** ADD: runs the list in order; returns and caches the final result. Runs DEL if ADD fails. */
  add(a: Attachment): Promise<CniResult> {
    return this.serialised(a.containerId, async () => {
      validateAttachment(a, true);
      const version = await this.negotiate(a.conflist, a.hostNetns);
      let prev: CniResult | undefined;
      try {
        for (const plugin of a.conflist.plugins) {
          const out = await this.call(a, plugin, 'ADD', version, prev);
          prev = parseResult(out, `plugin ${String(plugin.type)} ADD result`);
        }
      } catch (e) {
        // Spec: every ADD is followed by a DEL, even a failed one; do it now (best effort).
        await this.runDel(a, version, undefined).catch(() => undefined);
        throw e;
      }
      const result = convertResult(prev ?? { cniVersion: version }, version);
      await this.opts.cache.put({
        kind: 'cniCacheV1',
        containerId: a.containerId,
        ifName: a.ifName,
        networkName: a.conflist.name,
        netns: a.netns,
        config: Buffer.from(
          JSON.stringify({
            name: a.conflist.name,
            cniVersion: a.conflist.cniVersion,
            plugins: a.conflist.plugins,
          }),
        ).toString('base64'),
        cniArgs: Object.entries(a.args ?? {}),
        capabilityArgs: a.capabilityArgs ?? {},
        result,
      });
      return result;
    });
  }

  /** DEL: reverse order with the cached result as prevResult; idempotent; drops the cache. */
  del(a: Attachment): Promise<void> {
    return this.serialised(a.containerId, async () => {
      validateAttachment(a, false);
      const version = await this.negotiate(a.conflist, a.hostNetns);
      const cached = await this.opts.cache.get(a.conflist.name, a.containerId, a.ifName);
      await this.runDel(a, version, cached?.result);
      await this.opts.cache.delete(a.conflist.name, a.containerId, a.ifName);
    });
  }

  /** CHECK: every plugin with the cached result. Throws CniError from the first failing plugin. */
  check(a: Attachment): Promise<void> {
    return this.serialised(a.containerId, async () => {
      validateAttachment(a, true);
      if (a.conflist.disableCheck) return;
      const version = await this.negotiate(a.conflist, a.hostNetns);
      if (!versionAtLeast(version, '0.4.0'))
        throw new CniError(
          CniErrorCode.incompatibleVersion,
          `network ${a.conflist.name}: CHECK needs cniVersion 0.4.0 or later, speaking ${version}`,
        );
      const cached = await this.opts.cache.get(a.conflist.name, a.containerId, a.ifName);
      if (!cached)
        throw new CniError(
          CniErrorCode.unknownContainer,
          `network ${a.conflist.name}: no cached ADD result for container ${a.containerId} interface ${a.ifName}`,
        );
      const prev = convertResult(cached.result, version);
      for (const plugin of a.conflist.plugins) await this.call(a, plugin, 'CHECK', version, prev);
    });
  }

  /** STATUS (1.1.0): each plugin in order; throws its CniError (code 50/51 = not ready). */
  async status(list: NetworkConfigList, opts: ListOptions = {}): Promise<void> {
    const version = await this.negotiate(list, opts.hostNetns);
    if (!versionAtLeast(version, '1.1.0')) return;
    for (const plugin of list.plugins)
      await this.callList(list, plugin, 'STATUS', version, opts.hostNetns);
  }

  /**
   * GC: exclusive against ADD/DEL. DELs every cached attachment of the network not in
   * `valid`, then (1.1.0) sends GC with the valid list to every plugin. Collects all errors
   * and throws one CniError listing them.
   */
  async gc(
    list: NetworkConfigList,
    valid: readonly CniAttachment[],
    opts: ListOptions = {},
  ): Promise<void> {
    if (list.disableGC) return;
    while (this.gcGate) await this.gcGate;
    let open!: () => void;
    this.gcGate = new Promise((r) => (open = r));
    try {
      if (this.inflight > 0) await new Promise<void>((r) => (this.drained = r));
      const errors: string[] = [];
      const version = await this.negotiate(list, opts.hostNetns);
      for (const entry of await this.opts.cache.list(list.name)) {
        if (valid.some((v) => v.containerID === entry.containerId && v.ifname === entry.ifName))
          continue;
        const a: Attachment = {
          containerId: entry.containerId,
          ifName: entry.ifName,
          netns: entry.netns,
          conflist: list,
          ...(opts.hostNetns ? { hostNetns: opts.hostNetns } : {}),
        };
        try {
          await this.runDel(a, version, entry.result);
          await this.opts.cache.delete(list.name, entry.containerId, entry.ifName);
        } catch (e) {
          errors.push(`DEL ${entry.containerId}/${entry.ifName}: ${(e as Error).message}`);
        }
      }
      if (versionAtLeast(version, '1.1.0'))
        for (const plugin of list.plugins)
          await this.callList(list, plugin, 'GC', version, opts.hostNetns, valid).catch(
            (e: unknown) => errors.push(`${String(plugin.type)}: ${(e as Error).message}`),
          );
      if (errors.length > 0)
        throw new CniError(CniErrorCode.internal, `network ${list.name}: GC: ${errors.join('; ')}`);
    } finally {
      this.gcGate = undefined;
      open();
    }
  }

  /** The versions plugin `type` reports (VERSION), memoised per binary and namespace. */
  pluginVersions(type: string, hostNetns?: string): Promise<readonly string[]> {
    const key = `${hostNetns ?? ''}\0${type}`;
    let p = this.versions.get(key);
    if (!p) {
      p = (async () => {
        const out = await this.run(
          type,
          hostNetns,
          {
            CNI_COMMAND: 'VERSION',
            CNI_CONTAINERID: '',
            CNI_NETNS: '',
            CNI_IFNAME: '',
            CNI_ARGS: '',
            CNI_PATH: this.opts.cniPath.join(':'),
          },
          JSON.stringify({ cniVersion: RUNTIME_VERSIONS.at(-1) }),
        );
        const list = (out as { supportedVersions?: unknown } | undefined)?.supportedVersions;
        return Array.isArray(list)
          ? list.filter((v): v is string => typeof v === 'string')
          : ['0.1.0', '0.2.0'];
      })();
      p.catch(() => this.versions.delete(key));
      this.versions.set(key, p);
    }
    return p;
  }

  private async negotiate(list: NetworkConfigList, hostNetns: string | undefined): Promise<string> {
    const wanted = listVersions(list);
    const perPlugin = await Promise.all(
      list.plugins.map((p) => this.pluginVersions(String(p.type), hostNetns)),
    );
    const v = highestCommonVersion(wanted, RUNTIME_VERSIONS, ...perPlugin);
    if (v) return v;
    const detail = list.plugins
      .map((p, i) => `${String(p.type)} supports [${(perPlugin[i] ?? []).join(' ')}]`)
      .join('; ');
    throw new CniError(
      CniErrorCode.incompatibleVersion,
      `network ${list.name}: no CNI version in common: config allows [${wanted.join(' ')}], runtime supports [${RUNTIME_VERSIONS.join(' ')}]; ${detail}`,
    );
  }

  private async runDel(
    a: Attachment,
    version: string,
    cached: CniResult | undefined,
  ): Promise<void> {
    const prev =
      cached && versionAtLeast(version, '0.4.0') ? convertResult(cached, version) : undefined;
    for (const plugin of [...a.conflist.plugins].reverse())
      await this.call(a, plugin, 'DEL', version, prev);
  }

  private find(type: string): Promise<string> {
    return (this.opts.findPlugin ?? findPluginBinary)(type, this.opts.cniPath);
  }

  /**
   * Runs plugin `type` once: as a function when it is in `inProcess` and no node namespace is
   * to be entered (a function runs in ours), else its binary from CNI_PATH.
   */
  private async run(
    type: string,
    hostNetns: string | undefined,
    env: Readonly<Record<string, string>>,
    stdin: string,
  ): Promise<unknown> {
    const fn = hostNetns === undefined ? this.opts.inProcess?.get(type) : undefined;
    if (fn) return invokeInProcess(fn, { binary: `${type} (in-process)`, env, stdin });
    return invokePlugin(this.opts.execer, {
      binary: await this.find(type),
      env,
      stdin,
      ...launcher(hostNetns),
      timeoutMs: this.opts.timeoutMs ?? 60_000,
    });
  }

  private async call(
    a: Attachment,
    plugin: Readonly<Record<string, unknown>>,
    command: 'ADD' | 'DEL' | 'CHECK',
    version: string,
    prev: CniResult | undefined,
  ): Promise<unknown> {
    const type = String(plugin.type);
    const stdin = JSON.stringify(
      buildPluginConfig({
        list: a.conflist,
        plugin,
        cniVersion: version,
        prevResult: prev,
        capabilityArgs: a.capabilityArgs,
      }),
    );
    try {
      return await this.run(
        type,
        a.hostNetns,
        {
          CNI_COMMAND: command,
          CNI_CONTAINERID: a.containerId,
          CNI_NETNS: a.netns,
          CNI_IFNAME: a.ifName,
          CNI_ARGS: formatCniArgs(a.args),
          CNI_PATH: this.opts.cniPath.join(':'),
        },
        stdin,
      );
    } catch (e) {
      throw prefixed(
        e,
        `network ${a.conflist.name}: plugin ${type} ${command} (container ${a.containerId})`,
      );
    }
  }

  private async callList(
    list: NetworkConfigList,
    plugin: Readonly<Record<string, unknown>>,
    command: 'STATUS' | 'GC',
    version: string,
    hostNetns: string | undefined,
    valid?: readonly CniAttachment[],
  ): Promise<void> {
    const type = String(plugin.type);
    try {
      await this.run(
        type,
        hostNetns,
        {
          CNI_COMMAND: command,
          CNI_CONTAINERID: '',
          CNI_NETNS: '',
          CNI_IFNAME: '',
          CNI_ARGS: '',
          CNI_PATH: this.opts.cniPath.join(':'),
        },
        JSON.stringify(
          buildPluginConfig({ list, plugin, cniVersion: version, validAttachments: valid }),
        ),
      );
    } catch (e) {
      throw prefixed(e, `network ${list.name}: plugin ${type} ${command}`);
    }
  }

  /** One operation per container at a time; none while GC runs. */
  private async serialised<T>(containerId: string, fn: () => Promise<T>): Promise<T> {
    while (this.gcGate) await this.gcGate;
    this.inflight++;
    const before = this.perContainer.get(containerId) ?? Promise.resolve();
    const run = before.catch(() => undefined).then(fn);
    this.perContainer.set(containerId, run);
    try {
      return await run;
    } finally {
      if (this.perContainer.get(containerId) === run) this.perContainer.delete(containerId);
      this.inflight--;
      if (this.inflight === 0 && this.drained) {
        const d = this.drained;
        this.drained = undefined;
        d();
      }
    }
  }
}

function launcher(hostNetns: string | undefined): { launcher?: readonly string[] } {
  return hostNetns ? { launcher: ['nsenter', `--net=${hostNetns}`] } : {};
}

function prefixed(e: unknown, where: string): CniError {
  if (e instanceof CniError) return new CniError(e.cniCode, `${where}: ${e.message}`, e.details, e);
  return new CniError(
    CniErrorCode.internal,
    `${where}: ${e instanceof Error ? e.message : String(e)}`,
    undefined,
    e,
  );
}

/** Checks container ID and interface name before any plugin runs (ValidationError). */
function validateAttachment(a: Attachment, needsNetns: boolean): void {
  const object = `attachment ${a.conflist.name}/${a.containerId}/${a.ifName}`;
  const errs: FieldError[] = [];
  if (!NAME_RE.test(a.containerId))
    errs.push({ object, field: 'containerId', message: `must match ${NAME_RE.source}` });
  const bad = invalidIfName(a.ifName);
  if (bad) errs.push({ object, field: 'ifName', message: bad });
  if (needsNetns && a.netns === '')
    errs.push({
      object,
      field: 'netns',
      message: 'required (a netns path such as /run/netns/pod1)',
    });
  if (errs.length > 0) throw new ValidationError(errs);
}
