#!/usr/bin/env bash
# Minimal Debian roots for running the tests with what this machine's own userland lacks: newer
# CPython (Debian sid's python3.14 / python3.15 binary packages need glibc 2.38+) and another
# architecture (an arm64 root run through qemu-user).
#
# Usage:
#   tools/debian_root.sh path NAME
#       print the root's folder (it may not exist yet)
#   tools/debian_root.sh mirror
#       print the Debian mirror apt uses here (DEBIAN_MIRROR overrides it)
#   tools/debian_root.sh make NAME SUITE ARCH [PACKAGE...]
#       make the root once (debootstrap --variant=minbase) and cache it outside the clone;
#       a root made with other SUITE/ARCH/PACKAGES is made anew. Prints the root's folder.
#   tools/debian_root.sh run NAME [--bind HOSTDIR=ROOTDIR]... [--env VAR=VALUE]... -- CMD [ARG...]
#       run CMD inside the root (unshare + chroot) with /proc, /sys, /dev/shm, a private devpts
#       and each --bind mounted (a folder, or a file over a file: mounted after /proc, so that
#       it can replace e.g. /proc/cpuinfo); the command's exit status is this script's.
#
# Cache: $ONNX_RELU_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/onnx-relu), roots/NAME.
# The package mirror is the one this machine's apt uses (read from /etc/apt), never a fixed host.
# Needs root (debootstrap, unshare, chroot), debootstrap, and for a foreign ARCH
# qemu-user-static with binfmt-support (installed with apt-get when missing).
set -euo pipefail

cache_root() { echo "${ONNX_RELU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-relu}"; }
root_dir() { echo "$(cache_root)/roots/$1"; }

# The first http(s) URI of apt's Debian source (deb822 .sources or one-line .list files).
apt_mirror() {
    local uri
    uri=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
              /etc/apt/sources.list.d/*.list 2>/dev/null \
          | grep -v -- '-security' | grep -oE 'https?://[^ ]+/debian/?' | head -n 1 || true)
    if [ -z "${DEBIAN_MIRROR:-$uri}" ]; then
        echo "debian_root.sh: no Debian mirror found in /etc/apt; set DEBIAN_MIRROR" >&2
        return 1
    fi
    echo "${DEBIAN_MIRROR:-$uri}"
}

need_tools() {
    local missing=()
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    if [ "$1" != "$(dpkg --print-architecture)" ]; then
        command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static binfmt-support)
    fi
    if [ ${#missing[@]} -gt 0 ]; then
        echo "debian_root.sh: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if [ "$1" != "$(dpkg --print-architecture)" ] && command -v update-binfmts >/dev/null; then
        # binfmt_misc may be unmounted in a container; qemu-user-static's entries need it.
        [ -e /proc/sys/fs/binfmt_misc/status ] \
            || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
        update-binfmts --enable >/dev/null 2>&1 || true
    fi
}

cmd_make() {
    local name=$1 suite=$2 arch=$3
    shift 3
    local dir stamp want
    dir=$(root_dir "$name")
    want="$suite $arch $*"
    stamp="$dir/.onnx-relu-root"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        echo "$dir"
        return 0
    fi
    # Same suite and architecture, other packages: install what is missing into the root that
    # is there (minutes saved under emulation) rather than making it anew.
    if [ -f "$stamp" ] && [ "$(cut -d' ' -f1-2 "$stamp")" = "$suite $arch" ]; then
        echo "debian_root.sh: adding packages to $name: $*" >&2
        if cmd_run "$name" -- sh -c 'apt-get -o Acquire::Check-Valid-Until=false update -qq &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"' \
                sh "$@" >"$dir.add.log" 2>&1; then
            echo "$want" >"$stamp"
            rm -f "$dir.add.log"
            echo "$dir"
            return 0
        fi
        echo "debian_root.sh: adding packages failed (see $dir.add.log); making the root anew" >&2
    fi
    need_tools "$arch"
    local mirror include
    mirror=$(apt_mirror)
    include=$(IFS=,; echo "$*")
    rm -rf "$dir.partial"
    mkdir -p "$(dirname "$dir")"
    echo "debian_root.sh: making $name ($suite, $arch) in $dir; once, a few minutes" >&2
    debootstrap --variant=minbase --arch="$arch" ${include:+--include="$include"} \
        "$suite" "$dir.partial" "$mirror" >"$dir.partial.log" 2>&1 || {
        echo "debian_root.sh: debootstrap failed; the last lines of $dir.partial.log:" >&2
        tail -n 20 "$dir.partial.log" >&2
        return 1
    }
    # Name resolution and the host's CA bundle for pip inside the root.
    cp -L /etc/resolv.conf "$dir.partial/etc/resolv.conf" 2>/dev/null || true
    mkdir -p "$dir.partial/etc/ssl/certs"
    cp -L /etc/ssl/certs/ca-certificates.crt "$dir.partial/etc/ssl/certs/host-ca.crt"
    echo "$want" >"$dir.partial/.onnx-relu-root"
    rm -rf "$dir" "$dir.partial.log"
    mv "$dir.partial" "$dir"
    echo "$dir"
}

cmd_run() {
    local name=$1
    shift
    local dir binds=() envs=()
    dir=$(root_dir "$name")
    [ -f "$dir/.onnx-relu-root" ] || {
        echo "debian_root.sh: no root '$name' in $dir (make it first)" >&2
        return 2
    }
    while [ $# -gt 0 ]; do
        case $1 in
            --bind) binds+=("$2"); shift 2 ;;
            --env) envs+=("$2"); shift 2 ;;
            --) shift; break ;;
            *) echo "debian_root.sh run: unknown option $1" >&2; return 2 ;;
        esac
    done
    [ $# -gt 0 ] || { echo "debian_root.sh run: no command" >&2; return 2; }
    need_tools "$(cut -d' ' -f2 "$dir/.onnx-relu-root")"
    local mounts="set -e
mount -t proc proc '$dir/proc'
mount --rbind /sys '$dir/sys'
mkdir -p '$dir/dev/shm' '$dir/dev/pts'
mount -t tmpfs -o mode=1777 tmpfs '$dir/dev/shm'
mount -t devpts -o newinstance,ptmxmode=0666 devpts '$dir/dev/pts'
ln -sf pts/ptmx '$dir/dev/ptmx' 2>/dev/null || true
"
    local bind host inside
    for bind in "${binds[@]+"${binds[@]}"}"; do
        host=${bind%%=*}
        inside=${bind#*=}
        if [ -d "$host" ]; then
            mounts+="mkdir -p '$dir$inside'
"
        else  # a file (e.g. over /proc/cpuinfo): the mount point must be a file
            mounts+="[ -e '$dir$inside' ] || touch '$dir$inside'
"
        fi
        mounts+="mount --bind '$host' '$dir$inside'
"
    done
    # A clean environment inside: the root's own PATH, the host CA bundle for pip, and what the
    # caller passed. PYTHONUNBUFFERED is passed through as the host has it.
    local env_args=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
                    LANG=C.UTF-8 PIP_CERT=/etc/ssl/certs/host-ca.crt
                    SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt
                    UV_NATIVE_TLS=1 ${PYTHONUNBUFFERED:+PYTHONUNBUFFERED=$PYTHONUNBUFFERED})
    env_args+=("${envs[@]+"${envs[@]}"}")
    unshare --mount --propagation private -- bash -c "$mounts
exec chroot '$dir' /usr/bin/env -i \"\$@\"" bash "${env_args[@]}" "$@"
}

case ${1:-} in
    path) root_dir "$2" ;;
    mirror) apt_mirror ;;
    make) shift; cmd_make "$@" ;;
    run) shift; cmd_run "$@" ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
