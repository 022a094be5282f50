// The plugin's IPAM step behind one interface: the built-in host-local style allocator
// (plan-ipam.ts decisions applied through an IpamStore under its lock) or delegation to an
// IPAM binary from CNI_PATH with the same environment and stdin, as the spec prescribes.

import type { Execer } from '../os/exec.js';
import { invokePlugin } from './invoke.js';
import type { IpamStore } from './ipam-store.js';
import { parseResult, type BuiltinIpamConfig, type PluginConfig } from './parse-config.js';
import {
  ipamResult,
  ownedAddresses,
  planAllocation,
  planGc,
  planRelease,
  requestedIPs,
} from './plan-ipam.js';
import { CniError, CniErrorCode, type CniResult } from './types.js';

export interface IpamContext {
  readonly cfg: PluginConfig;
  readonly containerId: string;
  readonly ifName: string;
  /** CNI_ARGS (for IP=). */
  readonly args: ReadonlyMap<string, string>;
  /** The plugin's own environment and stdin, forwarded verbatim to a delegate. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdin: string;
}

export interface IpamDriver {
  add(ctx: IpamContext): Promise<CniResult>;
  /** Releases the attachment; returns the addresses released when known. */
  del(ctx: IpamContext): Promise<string[]>;
  /** Throws code 999 when the attachment's reservation is missing or differs from prevResult. */
  check(ctx: IpamContext): Promise<void>;
  /** Releases reservations of attachments not in cfg.validAttachments; returns them. */
  gc(ctx: IpamContext): Promise<string[]>;
  /** Throws code 50 when an ADD could not get an address now. */
  status(ctx: IpamContext): Promise<void>;
}

export interface IpamDeps {
  readonly store: IpamStore;
  readonly execer: Execer;
  readonly findPlugin: (type: string, dirs: readonly string[]) => Promise<string>;
}

function builtin(cfg: PluginConfig): BuiltinIpamConfig | undefined {
  return cfg.ipam?.kind === 'builtin' ? cfg.ipam : undefined;
}

function envStrings(
  env: Readonly<Record<string, string | undefined>>,
  command: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k.startsWith('CNI_')) out[k] = v;
  out.CNI_COMMAND = command;
  return out;
}

/** Built-in allocator with delegation for any other `ipam.type`. */
export class Ipam implements IpamDriver {
  private readonly deps: IpamDeps;
  constructor(deps: IpamDeps) {
    this.deps = deps;
  }

  private async delegate(ctx: IpamContext, command: string): Promise<unknown> {
    const type = ctx.cfg.ipam?.type ?? '';
    const dirs = (ctx.env.CNI_PATH ?? '').split(':').filter((d) => d !== '');
    const binary = await this.deps.findPlugin(type, dirs);
    return invokePlugin(this.deps.execer, {
      binary,
      env: envStrings(ctx.env, command),
      stdin: ctx.stdin,
    });
  }

  async add(ctx: IpamContext): Promise<CniResult> {
    const b = builtin(ctx.cfg);
    if (!b) {
      const out = await this.delegate(ctx, 'ADD');
      return parseResult(out, `IPAM plugin ${ctx.cfg.ipam?.type ?? ''} result`);
    }
    const requested = requestedIPs(ctx.args.get('IP'));
    const allocations = await this.deps.store.update(b.dataDir, ctx.cfg.name, (state) => {
      const plan = planAllocation(b, state, ctx.containerId, ctx.ifName, requested);
      return { value: plan.allocations, changes: plan.changes };
    });
    return ipamResult(ctx.cfg.cniVersion, b, allocations);
  }

  async del(ctx: IpamContext): Promise<string[]> {
    const b = builtin(ctx.cfg);
    if (!b) {
      await this.delegate(ctx, 'DEL');
      return [];
    }
    return this.deps.store.update(b.dataDir, ctx.cfg.name, (state) => {
      const changes = planRelease(state, ctx.containerId, ctx.ifName);
      return { value: changes.map((c) => c.ip), changes };
    });
  }

  async check(ctx: IpamContext): Promise<void> {
    const b = builtin(ctx.cfg);
    if (!b) {
      await this.delegate(ctx, 'CHECK');
      return;
    }
    const owned = await this.deps.store.update(b.dataDir, ctx.cfg.name, (state) => ({
      value: ownedAddresses(state, ctx.containerId, ctx.ifName),
      changes: [],
    }));
    const want = (ctx.cfg.prevResult?.ips ?? []).map((ip) =>
      ip.address.slice(0, ip.address.indexOf('/')),
    );
    const missing = want.filter((ip) => !owned.includes(ip));
    if (owned.length === 0 || missing.length > 0)
      throw new CniError(
        CniErrorCode.internal,
        `IPAM: no reservation for container ${ctx.containerId} interface ${ctx.ifName}${missing.length ? ` (missing ${missing.join(', ')})` : ''} in ${b.dataDir}/${ctx.cfg.name}`,
      );
  }

  async gc(ctx: IpamContext): Promise<string[]> {
    const b = builtin(ctx.cfg);
    if (!b) {
      await this.delegate(ctx, 'GC');
      return [];
    }
    const valid = ctx.cfg.validAttachments ?? [];
    return this.deps.store.update(b.dataDir, ctx.cfg.name, (state) => {
      const changes = planGc(state, valid);
      return { value: changes.map((c) => c.ip), changes };
    });
  }

  async status(ctx: IpamContext): Promise<void> {
    const b = builtin(ctx.cfg);
    if (!b) {
      if (ctx.cfg.ipam) await this.delegate(ctx, 'STATUS');
      return;
    }
    await this.deps.store.update(b.dataDir, ctx.cfg.name, (state) => {
      try {
        planAllocation(b, state, '\0status-probe', '\0', []);
      } catch (e) {
        if (e instanceof CniError)
          throw new CniError(CniErrorCode.notAvailable, `IPAM cannot allocate now: ${e.message}`);
        throw e;
      }
      return { value: undefined, changes: [] };
    });
  }
}

/** Canonical text of an IP in a CIDR string (`10.0.0.2/24` → `10.0.0.2`). */
export function addressOf(cidr: string): string {
  const slash = cidr.indexOf('/');
  return slash < 0 ? cidr : cidr.slice(0, slash);
}
