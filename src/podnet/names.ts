// The names flannel gives things, verbatim, so tools and people that know flannel find them:
// the Node annotations of its Kubernetes subnet manager, the VXLAN device, the subnet.env
// variables and its iptables chains. Constants only.

/** flannel's annotation prefix (flanneld's default `--kube-annotation-prefix`). */
const PREFIX = 'flannel.alpha.coreos.com';

export const ANNOTATION_BACKEND_TYPE = `${PREFIX}/backend-type`;
export const ANNOTATION_BACKEND_DATA = `${PREFIX}/backend-data`;
export const ANNOTATION_PUBLIC_IP = `${PREFIX}/public-ip`;
export const ANNOTATION_KUBE_SUBNET_MANAGER = `${PREFIX}/kube-subnet-manager`;

/** The VXLAN device of a VNI: `flannel.1` for VNI 1. */
export function vxlanDeviceName(vni: number): string {
  return `flannel.${vni}`;
}

/** Bytes a VXLAN-over-IPv4 packet adds: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14. */
export const VXLAN_OVERHEAD = 50;

/** Where flanneld writes subnet.env, which flannel's CNI plugin reads. */
export const DEFAULT_SUBNET_FILE = '/run/flannel/subnet.env';

export const CHAIN_POSTROUTING = 'FLANNEL-POSTRTG';
export const CHAIN_FORWARD = 'FLANNEL-FWD';
