#!/usr/bin/env bash
# Builds the VM test tier's initramfs: busybox, an /init (scripts/vm/init.sh) and the kernel
# modules the tier needs (virtio + 9p to mount the host's root, IPVS, ipset, netfilter, dummy,
# veth, bridge), with their dependencies resolved by `modprobe --show-depends` against the
# installed Debian kernel's modules.dep, in load order. Compressed modules (.ko.xz, .ko.zst,
# .ko.gz) are decompressed so busybox insmod loads them. Cached per kernel version and
# rebuilt only when this script, init.sh or the module list change.
#
#   bash scripts/vm/build-initramfs.sh KERNEL_VERSION OUT_DIR
#     prints the path of the initramfs (OUT_DIR/initramfs-KERNEL_VERSION.cpio.gz)
set -euo pipefail

kver=${1:?usage: build-initramfs.sh KERNEL_VERSION OUT_DIR}
out=${2:?usage: build-initramfs.sh KERNEL_VERSION OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
moddir=/lib/modules/${kver}

# Loaded in this order at boot (dependencies first, each once).
MODULES=(
  virtio_pci virtio_ring virtio_console netfs 9pnet 9pnet_virtio 9p
  dummy veth bridge br_netfilter
  nf_conntrack nf_nat nf_defrag_ipv4 nf_conntrack_netlink
  ip_vs ip_vs_rr ip_vs_wrr ip_vs_sh xt_ipvs
  ip_set ip_set_hash_ip ip_set_hash_ipport ip_set_hash_ipportip ip_set_hash_ipportnet
  ip_set_hash_net ip_set_hash_netport ip_set_bitmap_port ip_set_bitmap_ip xt_set
  ip_tables iptable_filter iptable_nat iptable_mangle x_tables xt_conntrack xt_MASQUERADE
  xt_mark xt_comment xt_addrtype xt_multiport nf_tables nft_compat
  ipt_REJECT nft_reject_ipv4 xt_physdev
)

[ -d "$moddir" ] || {
  echo "build-initramfs: no ${moddir} (apt-get install linux-image-amd64)" >&2
  exit 1
}
# busybox-static's binary: the initramfs has no libc.
busybox=/bin/busybox
[ -x "$busybox" ] || busybox=$(command -v busybox || true)
[ -n "$busybox" ] || {
  echo "build-initramfs: no busybox (apt-get install busybox-static)" >&2
  exit 1
}

mkdir -p "$out"
image=${out}/initramfs-${kver}.cpio.gz
stamp=$(cat "$0" "${here}/init.sh" "$busybox" "${moddir}/modules.dep" | sha256sum | cut -c1-16)
if [ -f "$image" ] && [ "$(cat "${image}.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$image"
  exit 0
fi

work=$(mktemp -d "${out}/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "${work}"/{bin,dev,proc,sys,newroot,lib/modules}
cp "$busybox" "${work}/bin/busybox"
for applet in sh mount umount mkdir insmod cat sleep poweroff reboot switch_root chroot echo \
  ls sync mknod ln ip uname grep; do
  ln -s busybox "${work}/bin/${applet}"
done
cp "${here}/init.sh" "${work}/init"
chmod 0755 "${work}/init"

# Dependencies in load order, each module once; built-in ones need nothing.
: >"${work}/lib/modules/order"
declare -A seen=()
for m in "${MODULES[@]}"; do
  while read -r verb path _; do
    [ "$verb" = insmod ] || continue
    [ -z "${seen[$path]:-}" ] || continue
    seen[$path]=1
    base=$(basename "$path")
    case "$base" in
      *.ko.xz) xz -dc "$path" >"${work}/lib/modules/${base%.xz}" && base=${base%.xz} ;;
      *.ko.zst) zstd -qdc "$path" >"${work}/lib/modules/${base%.zst}" && base=${base%.zst} ;;
      *.ko.gz) gzip -dc "$path" >"${work}/lib/modules/${base%.gz}" && base=${base%.gz} ;;
      *) cp "$path" "${work}/lib/modules/${base}" ;;
    esac
    echo "$base" >>"${work}/lib/modules/order"
  done < <(modprobe -S "$kver" --show-depends "$m" 2>/dev/null || echo "missing $m")
done

(cd "$work" && find . -mindepth 1 | cpio -o -H newc --quiet | gzip -1) >"${image}.tmp"
mv "${image}.tmp" "$image"
echo "$stamp" >"${image}.stamp"
echo "$image"
