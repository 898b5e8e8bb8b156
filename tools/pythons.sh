#!/usr/bin/env bash
# The CPython interpreters `make pythons` tests on, provided once and cached outside the clone.
#
# Usage:
#   tools/pythons.sh path VERSION     print how to run VERSION's interpreter; exit 1 if not there yet
#   tools/pythons.sh make VERSION...  provide each VERSION (a cold run makes it, a warm one finds
#                                     it) and print its `path` line
#
# VERSION and where its interpreter comes from:
#   3.11 3.12 3.13  pyenv's newest $PYENV_ROOT/versions/X.Y.*, else pythonX.Y on PATH. Nothing is
#                   built: python.org cannot be reached from the CI machines. The path printed is
#                   the host executable.
#   3.14 3.15       Debian sid's python3.14 / python3.15 binary packages in a minimal sid root
#                   (tools/debian_root.sh, root `sid`): they need a newer glibc than the host's,
#                   so they run only inside the root. The path printed is `sid:/usr/bin/pythonX.Y`
#                   (tools/test_pythons.sh runs it with `tools/debian_root.sh run sid`).
#                   Cold: debootstrap, a few minutes and about 1 GB.
#   3.13t           free-threaded CPython 3.13 built with --disable-gil from the upstream source
#                   in Debian sid's python3.13 source package (the orig tarball; Debian's own
#                   patches are for its system layout and are not applied), fetched with a
#                   private apt configuration holding a deb-src line of the mirror apt uses here,
#                   and installed into $CACHE/python/3.13t (bin/python3.13t). Its build
#                   dependencies are installed with apt-get when missing. Cold: about 15 minutes
#                   of 2 idle cores.
#
# Cache: $ONNX_RELU_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/onnx-relu). Needs root for
# apt-get, debootstrap, unshare and chroot.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

cache=${ONNX_RELU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-relu}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}

# The sid root: the interpreters, their headers and venv, and a compiler for the wheel build.
sid_packages=(python3.14 python3.14-dev python3.14-venv python3.15 python3.15-dev python3.15-venv
              gcc g++ make git ca-certificates pkg-config)

# What CPython's ./configure needs for the standard library's extension modules.
ft_build_deps=(build-essential pkg-config libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
               libsqlite3-dev libreadline-dev uuid-dev libgdbm-dev libgdbm-compat-dev
               libncurses-dev libzstd-dev tk-dev libexpat1-dev xz-utils)

log() { echo "pythons.sh: $*" >&2; }

host_python() {  # the newest pyenv X.Y.* interpreter, else pythonX.Y on PATH
    local version=$1 found=""
    if [ -d "$pyenv_root/versions" ]; then
        found=$(ls -d "$pyenv_root/versions/$version".* 2>/dev/null \
                | grep -E "/$version\.[0-9]+$" | sort -V | tail -1 || true)
        [ -n "$found" ] && found="$found/bin/python$version"
    fi
    if [ -z "$found" ] || [ ! -x "$found" ]; then
        found=$(command -v "python$version" || true)
    fi
    echo "$found"
}

ft_prefix() { echo "$cache/python/3.13t"; }

# The Debian mirror apt uses here (one rule, tools/debian_root.sh's).
apt_mirror() { "$here/debian_root.sh" mirror; }

apt_install_missing() {  # apt-get install what dpkg does not list as installed
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" \
            || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# python3.13's upstream source from Debian sid, through an apt configuration of its own (its own
# sources list, lists and archives under $cache/apt-src) so that the host's apt is left as it is.
fetch_python313_source() {
    local dest=$1 work="$cache/apt-src" mirror
    mirror=$(apt_mirror)
    mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/etc/preferences.d" "$dest"
    echo "deb-src $mirror sid main" >"$work/etc/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$work/etc/sources.list"
                -o "Dir::Etc::SourceParts=$work/etc/none"
                -o "Dir::Etc::PreferencesParts=$work/etc/preferences.d"
                -o "Dir::State::Lists=$work/lists"
                -o "Dir::Cache::Archives=$work/archives"
                -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
                -o "Acquire::Check-Valid-Until=false" -o "APT::Sandbox::User=root")
    apt-get "${opts[@]}" update -qq
    # The index may list a version the mirror does not (yet, or any longer) serve: the newest
    # one that downloads is taken.
    local version
    for version in $(apt-cache "${opts[@]}" showsrc python3.13 | sed -n 's/^Version: //p' \
                     | sort -rV); do
        rm -f "$dest"/python3.13_*
        if (cd "$dest" && apt-get "${opts[@]}" source --download-only -qq \
                "python3.13=$version" >/dev/null 2>&1); then
            return 0
        fi
        log "3.13t: python3.13 $version is listed but does not download; trying an older one"
    done
    log "3.13t: no python3.13 source package could be downloaded from $mirror"
    return 1
}

make_313t() {
    local prefix src build version tarball
    prefix=$(ft_prefix)
    if [ -x "$prefix/bin/python3.13t" ]; then
        return 0
    fi
    command -v apt-get >/dev/null || { log "3.13t: building it needs apt-get"; return 1; }
    apt_install_missing "${ft_build_deps[@]}" dpkg-dev
    build="$cache/build/3.13t"
    rm -rf "$build"
    mkdir -p "$build"
    log "3.13t: fetching python3.13's source from Debian sid"
    fetch_python313_source "$build/src"
    tarball=$(ls "$build/src"/python3.13_*.orig.tar.* | head -1)
    version=$(basename "$tarball" | sed -E 's/^python3\.13_([0-9.]*[0-9]).*/\1/')
    tar -xf "$tarball" -C "$build"
    src=$(ls -d "$build"/Python-* | head -1)
    log "3.13t: building CPython $version with --disable-gil into $prefix (once; ~15 min on 2 cores)"
    (
        cd "$src"
        ./configure --disable-gil --disable-test-modules --prefix="$prefix" --without-ensurepip \
            >"$build/configure.log" 2>&1
        make -j"$(nproc)" >"$build/make.log" 2>&1
        make install DESTDIR="$build/dest" >"$build/install.log" 2>&1
    ) || {
        log "3.13t: the build failed; see the logs in $build"
        return 1
    }
    # Built for its final place (the prefix is written into scripts and sysconfig data), staged
    # in DESTDIR and moved in whole: a half-installed prefix is never taken for a finished one.
    mkdir -p "$(dirname "$prefix")"
    mv "$build/dest$prefix" "$prefix"
    rm -rf "$build"
}

kind_of() {
    case $1 in
        3.14|3.15) echo sid ;;
        3.13t) echo built ;;
        *) echo host ;;
    esac
}

cmd_path() {
    local version=$1 found
    case $(kind_of "$version") in
        host)
            found=$(host_python "$version")
            [ -n "$found" ] || return 1
            echo "$found" ;;
        sid)
            found=$("$here/debian_root.sh" path sid)
            [ -f "$found/.onnx-relu-root" ] && [ -x "$found/usr/bin/python$version" ] || return 1
            echo "sid:/usr/bin/python$version" ;;
        built)
            found="$(ft_prefix)/bin/python3.13t"
            [ -x "$found" ] || return 1
            echo "$found" ;;
    esac
}

cmd_make() {
    local version status=0
    for version in "$@"; do
        if ! cmd_path "$version" >/dev/null; then
            case $(kind_of "$version") in
                host)
                    log "$version: no pyenv $version.* in $pyenv_root/versions, no python$version on PATH" ;;
                sid)
                    "$here/debian_root.sh" make sid sid amd64 "${sid_packages[@]}" >/dev/null \
                        || log "$version: the sid root could not be made" ;;
                built)
                    make_313t || log "3.13t: could not be built" ;;
            esac
        fi
        cmd_path "$version" || status=1
    done
    return "$status"
}

case ${1:-} in
    path) [ $# -eq 2 ] || { sed -n '2,27p' "$0" >&2; exit 2; }; cmd_path "$2" ;;
    make) shift; cmd_make "$@" ;;
    *) sed -n '2,27p' "$0" >&2; exit 2 ;;
esac
