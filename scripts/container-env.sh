# shellcheck shell=bash
# Source this file (scripts/verify-image.sh and scripts/verify-testcontainers.sh do): podman and
# buildah from Debian, configured in a temp folder, with a stand-in for node:24-bookworm-slim built
# locally (base images cannot be pulled here). Run as root on a Debian bookworm machine.
# See /work/shared/notes/containers-and-kubernetes-here.md for why each setting is what it is.
#
# Caches (kept between runs, safe to delete):
#   $CW_CACHE/containers/   podman's image storage (the base image and the build's layers)
#   $CW_CACHE/base/         the stand-in base image's root file system, as a tar

CW_CACHE="${CW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concordance-worker}"
CW_BASE_IMAGE="${CW_BASE_IMAGE:-docker.io/library/node:24-bookworm-slim}"

cw_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Installs podman & co. with apt-get when one of them is missing.
cw_ensure_podman() {
  local missing=()
  for tool in podman buildah runc conmon slirp4netns debootstrap catatonit; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/libexec/podman/$tool" ] || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  cw_log "installing podman and its tools with apt-get (missing: ${missing[*]})"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    podman buildah runc conmon catatonit containernetworking-plugins \
    golang-github-containers-common fuse-overlayfs slirp4netns uidmap iptables debootstrap \
    >/dev/null
}

# Writes containers.conf and storage.conf into $1 and points podman at them. runc, not crun
# (crun 1.8 fails with "cgroups in hybrid mode not supported"); nofile at the hard limit (the
# default 1048576 fails with "setrlimit ... Operation not permitted").
cw_podman_env() {
  local dir="$1"
  local nofile
  nofile="$(ulimit -Hn)"
  [ "$nofile" = unlimited ] && nofile=1048576
  mkdir -p "$CW_CACHE/containers/storage" "$CW_CACHE/containers/run"
  cat >"$dir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  cat >"$dir/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$CW_CACHE/containers/storage"
runroot = "$CW_CACHE/containers/run"
EOF
  export CONTAINERS_CONF="$dir/containers.conf"
  export CONTAINERS_STORAGE_CONF="$dir/storage.conf"
}

# The Debian mirror apt uses on this machine (deb822 or one-line sources).
cw_debian_mirror() {
  local mirror
  mirror="$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' |
    grep -v security | head -n 1)"
  [ -n "$mirror" ] || mirror="$(grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    2>/dev/null | awk '{print $2}' | grep -v security | head -n 1)"
  echo "${mirror:-http://deb.debian.org/debian}"
}

# Makes sure $CW_BASE_IMAGE exists: a stand-in for node:24-bookworm-slim (Debian bookworm minbase,
# this machine's Node 24 binary, npm 11 from the registry, user node with uid 1000), imported from
# the cached tar, which is built with debootstrap when absent.
cw_ensure_base_image() {
  podman image exists "$CW_BASE_IMAGE" && return 0
  local node_version tar
  node_version="$(node --version)"
  tar="$CW_CACHE/base/node-${node_version}-bookworm-slim.tar"
  if [ ! -s "$tar" ]; then
    cw_log "building the stand-in base image's root file system (debootstrap, Node $node_version)"
    local rootfs
    rootfs="$(mktemp -d "${TMPDIR:-/tmp}/cw-rootfs-XXXXXX")"
    debootstrap --variant=minbase bookworm "$rootfs" "$(cw_debian_mirror)" >/dev/null
    install -m 0755 "$(command -v node)" "$rootfs/usr/local/bin/node"
    npm install -g --prefix "$rootfs/usr/local" --no-audit --no-fund --loglevel=error npm@11 >/dev/null
    chroot "$rootfs" groupadd --gid 1000 node
    chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
    rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
    mkdir -p "$CW_CACHE/base"
    tar -C "$rootfs" -cf "$tar.partial" .
    mv "$tar.partial" "$tar"
    rm -rf "$rootfs"
  fi
  cw_log "importing the stand-in base image $CW_BASE_IMAGE from $tar"
  podman import --quiet --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tar" "$CW_BASE_IMAGE" >/dev/null
}

# Build options that give npm in RUN steps this machine's CA bundle (a TLS-intercepting proxy sits
# between here and the registry) at build time only: the bundle and an npmrc naming it are mounted
# into each RUN, never copied into a layer. Prints one option per line.
cw_ca_build_options() {
  local dir="$1"
  local bundle=/etc/ssl/certs/ca-certificates.crt
  [ -s "$bundle" ] || return 0
  printf 'cafile=%s\n' "$bundle" >"$dir/npmrc"
  printf '%s\n' -v "$bundle:$bundle:ro" -v "$dir/npmrc:/root/.npmrc:ro"
}

# A TCP port free on 127.0.0.1 right now.
cw_free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
