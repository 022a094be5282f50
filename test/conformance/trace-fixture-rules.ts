// Rules for a kube-proxy fixture's flow step when the fixture carries no rule text: the
// fixture's Services and EndpointSlices rendered through svcnet's iptables renderer with the
// fixture's proxier profile. Until the renderer exists on this branch, it reports why not.

/** A proxier profile from ../shared/fixtures/kube-proxy/profiles.json (with overrides applied). */
export interface Profile {
  readonly ipFamily: 'IPv4' | 'IPv6';
  readonly nodeName: string;
  readonly nodeIP: string;
  readonly tracerLocalIPs: readonly string[];
  readonly [key: string]: unknown;
}

export interface FixtureObjects {
  readonly services: readonly Record<string, unknown>[];
  readonly endpointSlices: readonly Record<string, unknown>[];
}

/** The iptables-restore text our renderer produces for the objects, or why there is none. */
export function renderFixtureRules(
  _objects: FixtureObjects,
  _profile: Profile,
): { text: string } | { unavailable: string } {
  return {
    unavailable:
      'the fixture gives no rule text for this flow and the iptables renderer (branch render) is not merged yet',
  };
}
