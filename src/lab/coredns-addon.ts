// The lab's cluster DNS: deploy/coredns.yaml (ServiceAccount, RBAC, the `coredns` ConfigMap
// with kubeadm's Corefile, the `coredns` Deployment running `svcnet dns --corefile` from a
// configMap volume, Service kube-dns), the very manifest a real cluster applies, with the
// lab's values: kube-dns's clusterIP is the plan's DNS address (one address, also in a
// dual-stack lab, as before), the Corefile's `cluster.local` becomes the lab's cluster domain
// (the Corefile is otherwise kubeadm's, `reload` included, so editing the ConfigMap reaches
// the Pods through the volume's `..data` swap and svcnet dns applies it), and the Pods get
// `--workers 1` (two replicas already; one process each keeps the lab's memory down) and a
// 1 s readiness period (the manifest has a real cluster's 10 s), so `lab up` sees them Ready
// as soon as they serve. A deleted DNS Pod goes into lameduck as CoreDNS with the Corefile's
// `health { lameduck 5s }` (it answers while /ready fails and its endpoint is terminating), so
// its grace period is set to the default 30 s explicitly, well above the lameduck, lest the
// node agent's SIGKILL cut it short. The manifest's dnsPolicy Default gives the Pods the
// node's resolv.conf, which `forward . /etc/resolv.conf` reads. The node agent runs the Pods
// as `svcnet dns` in their own network namespaces, with the `--corefile` path rewritten to the
// volume's directory (configmap-volume.ts). Pure but for reading the manifest.

import type { KubeObject } from '../kube/types.js';
import {
  isObject,
  manifestDocs,
  readDeployManifest,
  withContainers,
  withPodSpec,
  withReadinessPeriod,
} from './deploy-manifest.js';
import type { LabPlan } from './topology.js';

export const COREDNS_MANIFEST = 'coredns.yaml';

/** The DNS Pods' grace period (must exceed the Corefile's lameduck). */
export const DNS_GRACE_SECONDS = 30;

/** The domain kubeadm's Corefile serves. */
const MANIFEST_DOMAIN = 'cluster.local';

export interface CorednsValues {
  /** The cluster domain (default cluster.local). */
  readonly domain?: string;
  /** `svcnet dns --workers` of each Pod (default 1). */
  readonly workers?: number;
  /** The readiness probe's period (default 1 s). */
  readonly readinessPeriodSeconds?: number;
}

/** The Corefile with `cluster.local` (a whole word: zones, cache's disable) as `domain`. */
export function labCorefile(text: string, domain = MANIFEST_DOMAIN): string {
  if (domain === MANIFEST_DOMAIN) return text;
  return text.replace(/(?<=^|\s)cluster\.local(?=\s|$)/gm, domain);
}

/** deploy/coredns.yaml's objects with the lab's values (manifest text given). */
export function corednsObjects(
  manifest: string,
  plan: LabPlan,
  values: CorednsValues = {},
): KubeObject[] {
  return manifestDocs(manifest).map((doc) => {
    const name = isObject(doc.metadata) ? String(doc.metadata.name) : '?';
    switch (doc.kind) {
      case 'ConfigMap': {
        const data = isObject(doc.data) ? doc.data : {};
        const corefile = data.Corefile;
        if (typeof corefile !== 'string')
          throw new Error(`${COREDNS_MANIFEST}: ConfigMap ${name}: data.Corefile missing`);
        return { ...doc, data: { ...data, Corefile: labCorefile(corefile, values.domain) } };
      }
      case 'Deployment': {
        const workers = String(values.workers ?? 1);
        const pods = withPodSpec(doc, (spec) => ({
          ...spec,
          terminationGracePeriodSeconds: DNS_GRACE_SECONDS,
        }));
        const args = withContainers(pods, (c) =>
          Array.isArray(c.command) && c.command[0] === 'svcnet'
            ? {
                ...c,
                args: [
                  ...(Array.isArray(c.args) ? (c.args as unknown[]) : []),
                  '--workers',
                  workers,
                ],
              }
            : c,
        );
        return withReadinessPeriod(args, values.readinessPeriodSeconds ?? 1);
      }
      case 'Service': {
        const spec = isObject(doc.spec) ? doc.spec : {};
        if (typeof spec.clusterIP !== 'string')
          throw new Error(`${COREDNS_MANIFEST}: Service ${name}: spec.clusterIP missing`);
        return { ...doc, spec: { ...spec, clusterIP: plan.dnsServiceIP } };
      }
      default:
        return doc;
    }
  });
}

/** The lab's cluster DNS objects, from the deploy/ manifest on disk. */
export function corednsAddon(plan: LabPlan, values: CorednsValues = {}): KubeObject[] {
  return corednsObjects(readDeployManifest(COREDNS_MANIFEST), plan, values);
}
