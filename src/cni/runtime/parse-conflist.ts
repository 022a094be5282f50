// The runtime's pure core: parsing and validating network configuration lists (.conflist,
// and legacy single-plugin .conf/.json wrapped into a list), choosing the spec version to
// speak, and building each plugin's stdin (name, cniVersion, prevResult, runtimeConfig from
// capabilities; every other key passed through untouched). No I/O.

import { ValidationError, type FieldError } from '../../errors.js';
import { NAME_RE } from '../parse-request.js';
import type { CniAttachment, CniResult } from '../types.js';
import { parseVersion, SUPPORTED_VERSIONS } from '../version.js';

type Json = Record<string, unknown>;

/** A parsed network configuration list. `plugins` keep their raw keys for pass-through. */
export interface NetworkConfigList {
  readonly name: string;
  readonly cniVersion: string;
  /** `cniVersions` from the file (1.1.0); empty when absent. */
  readonly cniVersions: readonly string[];
  readonly disableCheck: boolean;
  readonly disableGC: boolean;
  readonly plugins: readonly Readonly<Json>[];
  /** Where it came from, for messages. */
  readonly source: string;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** libcni accepts booleans and the strings "true"/"false" for disableCheck/disableGC. */
function boolish(v: unknown, field: string, errs: FieldError[], object: string): boolean {
  if (v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  errs.push({ object, field, message: `must be a boolean, got ${JSON.stringify(v)}` });
  return false;
}

/**
 * Parses a .conflist (or, when it has `type` and no `plugins`, a legacy single-plugin
 * config wrapped into a list). Throws ValidationError listing every problem, each naming
 * the source and field.
 */
export function parseConflist(text: string, source = 'conflist'): NetworkConfigList {
  const object = `network config ${source}`;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ValidationError([
      { object, field: '', message: `not JSON: ${(e as Error).message}` },
    ]);
  }
  if (!isObject(raw))
    throw new ValidationError([{ object, field: '', message: 'must be a JSON object' }]);
  const errs: FieldError[] = [];
  const name = raw.name;
  if (typeof name !== 'string' || !NAME_RE.test(name))
    errs.push({
      object,
      field: 'name',
      message: `must match ${NAME_RE.source}, got ${JSON.stringify(name)}`,
    });
  const cniVersion = raw.cniVersion;
  if (typeof cniVersion !== 'string' || !parseVersion(cniVersion))
    errs.push({
      object,
      field: 'cniVersion',
      message: `must be a version like "1.0.0", got ${JSON.stringify(cniVersion)}`,
    });
  let cniVersions: string[] = [];
  if (raw.cniVersions !== undefined) {
    if (
      !Array.isArray(raw.cniVersions) ||
      !raw.cniVersions.every((v) => typeof v === 'string' && parseVersion(v))
    )
      errs.push({
        object,
        field: 'cniVersions',
        message: 'must be a list of versions like "1.1.0"',
      });
    else cniVersions = raw.cniVersions as string[];
  }
  let plugins: Json[] = [];
  if (raw.plugins === undefined && typeof raw.type === 'string') {
    // Legacy .conf: the whole object is the one plugin.
    const single: Json = { ...raw };
    delete single.cniVersion;
    delete single.name;
    plugins = [single];
  } else if (!Array.isArray(raw.plugins) || raw.plugins.length === 0) {
    errs.push({
      object,
      field: 'plugins',
      message: 'required: a non-empty list of plugin objects',
    });
  } else {
    raw.plugins.forEach((p: unknown, i) => {
      const field = `plugins[${i}]`;
      if (!isObject(p)) {
        errs.push({ object, field, message: 'must be an object' });
        return;
      }
      if (typeof p.type !== 'string' || p.type === '' || p.type.includes('/'))
        errs.push({
          object,
          field: `${field}.type`,
          message: `required: a plugin binary name, got ${JSON.stringify(p.type)}`,
        });
      for (const k of Object.keys(p))
        if (k === 'runtimeConfig' || k === 'args' || k.startsWith('cni.dev/'))
          errs.push({
            object,
            field: `${field}.${k}`,
            message: 'is reserved for the runtime and may not appear in a file',
          });
      if (p.capabilities !== undefined && !isObject(p.capabilities))
        errs.push({
          object,
          field: `${field}.capabilities`,
          message: 'must be an object of name: boolean',
        });
      plugins.push(p);
    });
  }
  const disableCheck = boolish(raw.disableCheck, 'disableCheck', errs, object);
  const disableGC = boolish(raw.disableGC, 'disableGC', errs, object);
  if (errs.length > 0) throw new ValidationError(errs);
  return {
    name: name as string,
    cniVersion: cniVersion as string,
    cniVersions,
    disableCheck,
    disableGC,
    plugins,
    source,
  };
}

/** Versions the list allows (cniVersion ∪ cniVersions). */
export function listVersions(list: NetworkConfigList): string[] {
  return [...new Set([list.cniVersion, ...list.cniVersions])];
}

/** The versions the runtime speaks (same as the plugin's). */
export const RUNTIME_VERSIONS = SUPPORTED_VERSIONS;

export interface PluginRequestInput {
  readonly list: NetworkConfigList;
  readonly plugin: Readonly<Json>;
  readonly cniVersion: string;
  readonly prevResult?: CniResult | undefined;
  /** Capability args supplied by the caller (portMappings, ipRanges, dns, mac, …). */
  readonly capabilityArgs?: Readonly<Record<string, unknown>> | undefined;
  /** GC only. */
  readonly validAttachments?: readonly CniAttachment[] | undefined;
}

/**
 * The stdin for one plugin: its object with `name` and `cniVersion` injected, `runtimeConfig`
 * = capabilities it enabled ∩ args supplied, `prevResult` when given, both GC attachment
 * keys when given; `capabilities` itself is not forwarded.
 */
export function buildPluginConfig(input: PluginRequestInput): Json {
  const { plugin } = input;
  const out: Json = {};
  for (const [k, v] of Object.entries(plugin)) if (k !== 'capabilities') out[k] = v;
  out.cniVersion = input.cniVersion;
  out.name = input.list.name;
  const caps = isObject(plugin.capabilities) ? plugin.capabilities : {};
  const runtimeConfig: Json = {};
  for (const [cap, on] of Object.entries(caps))
    if (on === true && input.capabilityArgs && cap in input.capabilityArgs)
      runtimeConfig[cap] = input.capabilityArgs[cap];
  if (Object.keys(runtimeConfig).length > 0) out.runtimeConfig = runtimeConfig;
  if (input.prevResult) out.prevResult = input.prevResult;
  if (input.validAttachments) {
    const list = input.validAttachments.map((a) => ({
      containerID: a.containerID,
      ifname: a.ifname,
    }));
    out['cni.dev/valid-attachments'] = list;
    // The spec-v1.1.0 tag spelled the key this way; send both (libcni does, issue #1101).
    out['cni.dev/attachments'] = list;
  }
  return out;
}

/** Formats CNI_ARGS (`K=V;K=V`); throws ValidationError on keys or values with `;`/`=`. */
export function formatCniArgs(args: Readonly<Record<string, string>> | undefined): string {
  if (!args) return '';
  const errs: FieldError[] = [];
  const parts = Object.entries(args).map(([k, v]) => {
    if (k === '' || /[;=]/.test(k) || v.includes(';'))
      errs.push({
        object: 'CNI_ARGS',
        field: k,
        message: 'keys may not be empty or contain ";" or "=", values may not contain ";"',
      });
    return `${k}=${v}`;
  });
  if (errs.length > 0) throw new ValidationError(errs);
  return parts.join(';');
}

/**
 * Converts a result to another spec version's shape: pre-1.0.0 results carry `version` in
 * each ip, 1.0.0+ do not. Other fields are the same across 0.3.0–1.1.0.
 */
export function convertResult(result: CniResult, toVersion: string): CniResult {
  const pre1 = toVersion.startsWith('0.');
  return {
    ...result,
    cniVersion: toVersion,
    ...(result.ips
      ? {
          ips: result.ips.map((ip) => {
            const rest = { ...ip };
            delete rest.version;
            return pre1
              ? { version: ip.address.includes(':') ? ('6' as const) : ('4' as const), ...rest }
              : rest;
          }),
        }
      : {}),
  };
}
