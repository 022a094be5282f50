// The svcnet-cni plugin: one invocation (CNI_* environment + stdin config) in, the spec's
// stdout JSON and exit status out. Dispatches ADD, DEL, CHECK, VERSION, STATUS and GC over
// the pure cores (parse-*, plan-*) and the edges (Ip, Sysctl, IpamStore, Execer), all
// injected so the whole flow runs against Fakes in unit tests. Errors become CNI error JSON
// on stdout with exit 1; nothing but the result or the error goes to stdout. A `flannel`
// type config goes to plugin-flannel.ts, which comes back here for its bridge delegate.

import type { Ip } from '../os/ip.js';
import type { Sysctl } from '../os/sysctl.js';
import type { TextFiles } from '../os/text-files.js';
import { formatCIDR, formatIP, parseCIDR } from '../util/ip.js';
import { addressOf, Ipam, type IpamContext, type IpamDeps } from './ipam.js';
import { addMasq, removeMasq } from './masq.js';
import { decodeJson, parsePluginConfig, type PluginConfig } from './parse-config.js';
import { parseEnvironment, type CniRequest } from './parse-request.js';
import { runFlannel } from './plugin-flannel.js';
import {
  attachNames,
  attachResult,
  checkAttachment,
  planAttach,
  planBridgeGateway,
  podAddresses,
  resultRoutes,
  type ObservedState,
} from './plan-link.js';
import { CniError, CniErrorCode, type CniResult } from './types.js';
import { LATEST_VERSION, SUPPORTED_VERSIONS, versionAtLeast } from './version.js';

export interface PluginDeps extends IpamDeps {
  readonly ip: Ip;
  readonly sysctl: Sysctl;
  /** subnet.env and the flannel type's stored delegate configs. */
  readonly files: TextFiles;
}

export interface PluginOutput {
  /** Result JSON, error JSON, or empty. */
  readonly stdout: string;
  readonly exitCode: 0 | 1;
}

type Env = Readonly<Record<string, string | undefined>>;

interface Ctx {
  readonly req: CniRequest;
  readonly cfg: PluginConfig;
  readonly env: Env;
  readonly stdin: string;
  readonly deps: PluginDeps;
  readonly ipam: Ipam;
}

function ipamCtx(c: Ctx): IpamContext {
  return {
    cfg: c.cfg,
    containerId: c.req.containerId ?? '',
    ifName: c.req.ifName ?? '',
    args: c.req.args,
    env: c.env,
    stdin: c.stdin,
  };
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Appends our result to a chained prevResult, re-pointing our ips at the merged list. */
function mergeWithPrev(prev: CniResult | undefined, ours: CniResult): CniResult {
  if (!prev) return ours;
  const base = prev.interfaces?.length ?? 0;
  return {
    cniVersion: ours.cniVersion,
    interfaces: [...(prev.interfaces ?? []), ...(ours.interfaces ?? [])],
    ips: [
      ...(prev.ips ?? []),
      ...(ours.ips ?? []).map((ip) => ({
        ...ip,
        ...(ip.interface !== undefined ? { interface: ip.interface + base } : {}),
      })),
    ],
    routes: [...(prev.routes ?? []), ...(ours.routes ?? [])],
    dns: ours.dns && Object.keys(ours.dns).length > 0 ? ours.dns : (prev.dns ?? {}),
  };
}

async function cmdAdd(c: Ctx): Promise<CniResult> {
  const { cfg, deps } = c;
  const containerId = c.req.containerId ?? '';
  const ifName = c.req.ifName ?? '';
  const netns = c.req.netns ?? '';
  if (!(await deps.ip.netnsExists(netns)))
    throw new CniError(CniErrorCode.invalidNetns, `CNI_NETNS ${netns} does not exist`);
  const ipamRes = await c.ipam.add(ipamCtx(c));
  const names = attachNames(cfg.name, containerId, ifName);
  try {
    const addrs = podAddresses(ipamRes.ips ?? []);
    if (addrs.length === 0)
      throw new CniError(
        CniErrorCode.internal,
        `IPAM ${cfg.ipam?.type ?? ''} returned no addresses`,
      );
    const routes = resultRoutes(cfg, addrs, ipamRes.routes ?? []);
    const plan = planAttach(cfg, names, ifName, netns, addrs, routes);
    let gatewayOps: ReturnType<typeof planBridgeGateway> = [];
    if (cfg.mode === 'bridge') {
      await deps.ip.ensureBridge(undefined, cfg.bridge, cfg.mtu);
      const br = (await deps.ip.links(undefined)).find((l) => l.name === cfg.bridge);
      gatewayOps = planBridgeGateway(cfg, br?.addrs ?? [], addrs);
    }
    // Both ends in one exec where the namespace allows it (the dearest step of an ADD).
    const hostOps = [...gatewayOps, ...plan.hostOps];
    try {
      await deps.ip.batchPair(hostOps, netns, plan.podOps);
    } catch (e) {
      const text = errorText(e);
      if (/File exists/.test(text) && text.startsWith('ip in host namespace'))
        throw new CniError(
          CniErrorCode.internal,
          `container interface ${ifName} already exists in ${netns} (or host veth ${names.hostVeth} exists): ${text}`,
        );
      throw e;
    }
    for (const fam of plan.forwarding)
      await deps.sysctl.set(
        fam === 'IPv4' ? 'net.ipv4.ip_forward' : 'net.ipv6.conf.all.forwarding',
        '1',
      );
    if (cfg.ipMasq)
      for (const a of addrs) {
        const ip = formatIP(a.ip);
        const subnet = parseCIDR(`${ip}/${a.prefix}`);
        await addMasq(deps.execer, cfg.name, a.ip.family, subnet ? [formatCIDR(subnet)] : [], ip);
      }
    let bridgeMac: string | undefined;
    if (cfg.mode === 'bridge')
      bridgeMac = (await deps.ip.links(undefined)).find((l) => l.name === cfg.bridge)?.mac;
    return mergeWithPrev(
      cfg.prevResult,
      attachResult(cfg, names, ifName, netns, ipamRes, routes, bridgeMac),
    );
  } catch (e) {
    // Undo: the veth (its peer goes with it), masquerade, then the reservation.
    await deps.ip.deleteLink(undefined, names.hostVeth).catch(() => undefined);
    if (cfg.ipMasq)
      for (const ip of ipamRes.ips ?? [])
        await removeMasq(
          deps.execer,
          ip.address.includes(':') ? 'IPv6' : 'IPv4',
          addressOf(ip.address),
        ).catch(() => undefined);
    await c.ipam.del(ipamCtx(c)).catch(() => undefined);
    throw e;
  }
}

async function cmdDel(c: Ctx): Promise<void> {
  const { cfg, deps } = c;
  const names = attachNames(cfg.name, c.req.containerId ?? '', c.req.ifName ?? '');
  const errors: string[] = [];
  // Deleting the host end removes the Pod end, the host route and the /32 gateway with it;
  // when the netns is already gone the pair is gone too and this is a no-op. Only when no
  // host veth of ours exists (e.g. created under another name) is the Pod side entered.
  let removed = false;
  try {
    removed = await deps.ip.deleteLink(undefined, names.hostVeth);
  } catch (e) {
    errors.push(errorText(e));
  }
  const netns = c.req.netns;
  if (!removed && netns && (await deps.ip.netnsExists(netns)))
    await deps.ip
      .deleteLink(netns, c.req.ifName ?? '')
      .catch((e: unknown) => errors.push(errorText(e)));
  let released: string[] = [];
  try {
    released = await c.ipam.del(ipamCtx(c));
  } catch (e) {
    errors.push(errorText(e));
  }
  if (cfg.ipMasq) {
    const ips = new Set([
      ...released,
      ...(cfg.prevResult?.ips ?? []).map((ip) => addressOf(ip.address)),
    ]);
    for (const ip of ips)
      await removeMasq(deps.execer, ip.includes(':') ? 'IPv6' : 'IPv4', ip).catch((e: unknown) =>
        errors.push(errorText(e)),
      );
  }
  if (errors.length > 0)
    throw new CniError(CniErrorCode.internal, `DEL incomplete: ${errors.join('; ')}`);
}

async function cmdCheck(c: Ctx): Promise<void> {
  const { cfg, deps } = c;
  if (!versionAtLeast(cfg.cniVersion, '0.4.0'))
    throw new CniError(
      CniErrorCode.incompatibleVersion,
      `CHECK needs cniVersion 0.4.0 or later, config is "${cfg.cniVersion}"`,
    );
  const prev = cfg.prevResult;
  if (!prev)
    throw new CniError(
      CniErrorCode.invalidNetworkConfig,
      'CHECK needs prevResult (the ADD result) in the config',
    );
  // An error result (`code`/`msg`) is not an attachment to check: the ADD failed.
  const failed = prev as Partial<Record<'code' | 'msg', unknown>>;
  if (typeof failed.code === 'number')
    throw new CniError(
      CniErrorCode.invalidNetworkConfig,
      `CHECK: prevResult is an error result (code ${failed.code}${typeof failed.msg === 'string' ? `: ${failed.msg}` : ''}), not the result of an ADD`,
    );
  const netns = c.req.netns ?? '';
  if (!(await deps.ip.netnsExists(netns)))
    throw new CniError(CniErrorCode.invalidNetns, `CNI_NETNS ${netns} does not exist`);
  await c.ipam.check(ipamCtx(c));
  const families = [
    ...new Set((prev.ips ?? []).map((ip) => (ip.address.includes(':') ? 'IPv6' : 'IPv4'))),
  ];
  const [hostLinks, podLinks, hostRoutes, podRoutes] = await Promise.all([
    deps.ip.links(undefined),
    deps.ip.links(netns),
    Promise.all(families.map((f) => deps.ip.routes(undefined, f))).then((x) => x.flat()),
    Promise.all(families.map((f) => deps.ip.routes(netns, f))).then((x) => x.flat()),
  ]);
  const seen: ObservedState = { hostLinks, podLinks, hostRoutes, podRoutes };
  // Our own share of a chained result: the interfaces we created and the ips on them.
  const ifName = c.req.ifName ?? '';
  const names = attachNames(cfg.name, c.req.containerId ?? '', ifName);
  const problems = checkAttachment(cfg, names, ifName, prev, seen);
  if (problems.length > 0)
    throw new CniError(CniErrorCode.internal, `CHECK failed: ${problems.join('; ')}`);
}

async function cmdGc(c: Ctx): Promise<void> {
  const released = await c.ipam.gc(ipamCtx(c));
  const errors: string[] = [];
  if (c.cfg.ipMasq)
    for (const ip of released)
      await removeMasq(c.deps.execer, ip.includes(':') ? 'IPv6' : 'IPv4', ip).catch((e: unknown) =>
        errors.push(errorText(e)),
      );
  if (errors.length > 0)
    throw new CniError(CniErrorCode.internal, `GC incomplete: ${errors.join('; ')}`);
}

function versionReply(stdin: string): string {
  let asked = '1.1.0';
  try {
    const v = JSON.parse(stdin === '' ? '{}' : stdin) as { cniVersion?: unknown };
    if (typeof v.cniVersion === 'string' && v.cniVersion !== '') asked = v.cniVersion;
  } catch {
    // VERSION ignores a bad stdin, as the reference skel does.
  }
  return JSON.stringify({ cniVersion: asked, supportedVersions: SUPPORTED_VERSIONS });
}

function configType(stdin: string): string | undefined {
  try {
    const v = JSON.parse(stdin) as { type?: unknown } | null;
    return typeof v?.type === 'string' ? v.type : undefined;
  } catch {
    return undefined;
  }
}

/** One operation other than VERSION: the result for ADD, else undefined. Throws CniError. */
async function dispatch(
  req: CniRequest,
  env: Env,
  stdin: string,
  deps: PluginDeps,
): Promise<CniResult | undefined> {
  if (configType(stdin) === 'flannel')
    return runFlannel(req, env, stdin, deps, (denv, dstdin) =>
      dispatch(parseEnvironment(denv), denv, dstdin, deps),
    );
  const cfg = parsePluginConfig(stdin, req.command);
  const c: Ctx = { req, cfg, env, stdin, deps, ipam: new Ipam(deps) };
  switch (req.command) {
    case 'ADD':
      return cmdAdd(c);
    case 'DEL':
      await cmdDel(c);
      break;
    case 'CHECK':
      await cmdCheck(c);
      break;
    case 'GC':
      await cmdGc(c);
      break;
    case 'STATUS':
      await c.ipam.status(ipamCtx(c));
      break;
    case 'VERSION':
      break;
  }
  return undefined;
}

/**
 * Runs one plugin invocation. Never throws: failures come back as error JSON with exit 1
 * (tagged with the config's cniVersion when it was readable).
 */
export async function runPlugin(env: Env, stdin: string, deps: PluginDeps): Promise<PluginOutput> {
  let cniVersion: string | undefined;
  // Read first, so that errors about the environment (code 4) carry it too.
  try {
    const raw = decodeJson(stdin, 'network configuration') as { cniVersion?: unknown } | null;
    if (raw && typeof raw.cniVersion === 'string') cniVersion = raw.cniVersion;
  } catch {
    // parsePluginConfig reports it with the right code.
  }
  try {
    const req = parseEnvironment(env);
    if (req.command === 'VERSION') return { stdout: versionReply(stdin), exitCode: 0 };
    const result = await dispatch(req, env, stdin, deps);
    return { stdout: result === undefined ? '' : JSON.stringify(result), exitCode: 0 };
  } catch (e) {
    const err = e instanceof CniError ? e : new CniError(CniErrorCode.internal, errorText(e));
    // Every error result carries a cniVersion the runtime can read: the config's when we
    // support it, else ours (bad JSON, code 6; an unsupported version, code 4).
    const version =
      cniVersion !== undefined && SUPPORTED_VERSIONS.includes(cniVersion)
        ? cniVersion
        : LATEST_VERSION;
    return { stdout: JSON.stringify(err.toJSON(version)), exitCode: 1 };
  }
}
