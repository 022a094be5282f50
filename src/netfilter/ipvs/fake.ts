// FakeIpvs: an in-memory IPVS table for tests, dry runs and the tracer, with the verbs of
// kube-proxy's ipvs interface (add/update/delete/get virtual and real servers, flush,
// timeouts) and `run(ops)` / `restore(text)` that apply an `ipvsadm -R` script atomically.
// It refuses what the kernel refuses, with ipvsadm's messages: a duplicate service or
// destination (CONFLICT), a missing one (NOT_FOUND), an unknown scheduler, a bad port or
// weight, an address of the other family (INVALID_INPUT). Connection counters are 0, so a
// deleted real server goes at once. Real servers are kept sorted by `ip:port` like the
// upstream fake. `save()` / `list()` dump ipvsadm text.

import { SvcnetError, type ErrorCode } from '../../errors.js';
import {
  makeIpvsState,
  normalizeFlags,
  realServerKey,
  sortRealServers,
  virtualServerKey,
  type IpvsOperation,
  type IpvsService,
  type IpvsState,
  type RealServer,
  type VirtualServer,
  type VirtualServerId,
} from './model.js';
import { parseRestore } from './parse.js';
import { renderList, renderOperation, renderSave, type ListOptions } from './render.js';

export const KNOWN_SCHEDULERS: ReadonlySet<string> = new Set([
  'rr',
  'wrr',
  'lc',
  'wlc',
  'lblc',
  'lblcr',
  'dh',
  'sh',
  'sed',
  'nq',
  'fo',
  'ovf',
  'mh',
  'twos',
]);

export class IpvsError extends SvcnetError {
  /** 0-based index of the failing command when it came from a script; else -1. */
  readonly index: number;

  constructor(code: ErrorCode, message: string, index = -1) {
    super(code, message);
    this.index = index;
    this.name = 'IpvsError';
  }
}

export interface IpvsTimeouts {
  readonly tcp: number;
  readonly tcpFin: number;
  readonly udp: number;
}

type Table = Map<string, { virtualServer: VirtualServer; realServers: Map<string, RealServer> }>;

function refuse(code: ErrorCode, message: string): never {
  throw new IpvsError(code, message);
}

export class FakeIpvs {
  private table: Table = new Map();
  private timeouts: IpvsTimeouts = { tcp: 900, tcpFin: 120, udp: 300 };

  /** Applies an `ipvsadm -R` command list atomically; on a refusal nothing changes. */
  run(ops: readonly IpvsOperation[]): void {
    const next = cloneTable(this.table);
    ops.forEach((op, index) => {
      try {
        applyOperation(next, op);
      } catch (err) {
        if (err instanceof IpvsError) {
          throw new IpvsError(
            err.code,
            `line ${String(index + 1)} (${renderOperation(op)}): ${err.message}`,
            index,
          );
        }
        throw err;
      }
    });
    this.table = next;
  }

  restore(text: string): void {
    this.run(parseRestore(text));
  }

  flush(): void {
    this.table = new Map();
  }

  addVirtualServer(vs: VirtualServer): void {
    this.run([{ verb: 'addService', virtualServer: vs }]);
  }

  updateVirtualServer(vs: VirtualServer): void {
    this.run([{ verb: 'editService', virtualServer: vs }]);
  }

  deleteVirtualServer(id: VirtualServerId): void {
    this.run([{ verb: 'deleteService', id }]);
  }

  getVirtualServer(id: VirtualServerId): VirtualServer | undefined {
    return this.table.get(virtualServerKey(id))?.virtualServer;
  }

  getVirtualServers(): VirtualServer[] {
    return [...this.table.values()].map((s) => s.virtualServer);
  }

  addRealServer(id: VirtualServerId, rs: RealServer): void {
    this.run([{ verb: 'addReal', id, realServer: rs }]);
  }

  updateRealServer(id: VirtualServerId, rs: RealServer): void {
    this.run([{ verb: 'editReal', id, realServer: rs }]);
  }

  deleteRealServer(id: VirtualServerId, rs: Pick<RealServer, 'address' | 'port'>): void {
    this.run([{ verb: 'deleteReal', id, realServer: rs }]);
  }

  /** Real servers of a service sorted by `ip:port`; throws NOT_FOUND for a missing service. */
  getRealServers(id: VirtualServerId): RealServer[] {
    const s = this.table.get(virtualServerKey(id));
    if (!s) refuse('NOT_FOUND', 'No such service');
    return sortRealServers([...s.realServers.values()]);
  }

  configureTimeouts(t: IpvsTimeouts): void {
    this.timeouts = { ...t };
  }

  getTimeouts(): IpvsTimeouts {
    return this.timeouts;
  }

  state(): IpvsState {
    const services: IpvsService[] = [...this.table.values()].map((s) => ({
      virtualServer: s.virtualServer,
      realServers: [...s.realServers.values()],
    }));
    return makeIpvsState(services);
  }

  /** `ipvsadm -S -n`. */
  save(): string {
    return renderSave(this.state());
  }

  /** `ipvsadm -L -n`. */
  list(options?: ListOptions): string {
    return renderList(this.state(), options);
  }
}

function checkId(id: VirtualServerId): void {
  if (!Number.isInteger(id.port) || id.port < 0 || id.port > 65535)
    refuse('INVALID_INPUT', `Invalid port ${String(id.port)}`);
}

function checkVirtualServer(vs: VirtualServer): VirtualServer {
  checkId(vs);
  if (!KNOWN_SCHEDULERS.has(vs.scheduler))
    refuse('INVALID_INPUT', 'Scheduler not found: no such file or directory');
  if (vs.timeoutSeconds !== undefined && vs.timeoutSeconds < 1)
    refuse('INVALID_INPUT', 'Invalid timeout value');
  const flags = normalizeFlags(vs.flags).filter((f) => f !== 'hashed');
  return { ...vs, flags };
}

function checkRealServer(vs: VirtualServerId, rs: RealServer): void {
  if (!Number.isInteger(rs.port) || rs.port < 0 || rs.port > 65535)
    refuse('INVALID_INPUT', `Invalid port ${String(rs.port)}`);
  if (!Number.isInteger(rs.weight) || rs.weight < 0 || rs.weight > 2147483647)
    refuse('INVALID_INPUT', 'Illegal weight specified');
  if (rs.address.includes(':') !== vs.address.includes(':') && rs.forward === 'Masq') {
    refuse(
      'INVALID_INPUT',
      'Invalid argument: a real server of another family needs tunnel forwarding',
    );
  }
}

function applyOperation(table: Table, op: IpvsOperation): void {
  switch (op.verb) {
    case 'addService': {
      const key = virtualServerKey(op.virtualServer);
      if (table.has(key)) refuse('CONFLICT', 'Service already exists');
      table.set(key, {
        virtualServer: checkVirtualServer(op.virtualServer),
        realServers: new Map(),
      });
      return;
    }
    case 'editService': {
      const s = table.get(virtualServerKey(op.virtualServer));
      if (!s) refuse('NOT_FOUND', 'No such service');
      s.virtualServer = checkVirtualServer(op.virtualServer);
      return;
    }
    case 'deleteService':
      if (!table.delete(virtualServerKey(op.id))) refuse('NOT_FOUND', 'No such service');
      return;
    case 'clear':
      table.clear();
      return;
    default:
      applyRealOperation(table, op);
  }
}

function applyRealOperation(
  table: Table,
  op: Extract<IpvsOperation, { verb: 'addReal' | 'editReal' | 'deleteReal' }>,
): void {
  const s = table.get(virtualServerKey(op.id));
  if (!s) refuse('NOT_FOUND', 'No such service');
  const key = realServerKey(op.realServer);
  if (op.verb === 'deleteReal') {
    if (!s.realServers.delete(key)) refuse('NOT_FOUND', 'No such destination');
    return;
  }
  checkRealServer(s.virtualServer, op.realServer);
  const exists = s.realServers.has(key);
  if (op.verb === 'addReal' && exists) refuse('CONFLICT', 'Destination already exists');
  if (op.verb === 'editReal' && !exists) refuse('NOT_FOUND', 'No such destination');
  const { address, port, weight, forward } = op.realServer;
  s.realServers.set(key, { address, port, weight, forward });
}

function cloneTable(table: Table): Table {
  const out: Table = new Map();
  for (const [k, s] of table)
    out.set(k, { virtualServer: s.virtualServer, realServers: new Map(s.realServers) });
  return out;
}
