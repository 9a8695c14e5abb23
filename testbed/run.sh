#!/usr/bin/env bash
# rondpoint's emulated NUMA testbed (shared/design/linux-mechanisms.md, section 6).
#
# Boots Debian cloud kernels (the current 6.1 and 6.12) under QEMU/TCG as a 4-node machine with
# asymmetric distances (nodes 0 and 3 two hops apart), runs known-answer checks of the live
# backend inside (testbed/checks.sh), and exits non-zero if any check fails, printing the
# guest's log. Installs what it needs (qemu-system-x86, busybox-static, cpio) when run as
# root (and numactl, whose flags a check and whose migratepages the benchmark compare with, and stress-ng, which the
# stress check runs); kernel packages are cached in $RONDPOINT_TESTBED_CACHE (default ~/.cache/rondpoint-testbed).
#
#   testbed/run.sh              # both kernels, side by side (TESTBED_JOBS=1: one after the other)
#   KERNELS=linux-image-6.12-cloud-amd64 CHECKS=threads,thp VERBOSE=1 testbed/run.sh
#   CHECKS=threads REPEAT=5 testbed/run.sh   # each check 5 times in one boot (hunting flakes)
#   KEEP=/tmp/recs CHECKS=carrefour_own_shared REPEAT=5 testbed/run.sh
#       # the Carrefour checks record their runs; the recordings of failed ones are saved as
#       # /tmp/recs/KERNEL-CHECK-N-fail.jsonl for `rondpoint replay` (KEEP_ALL=1: every one)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cache=${RONDPOINT_TESTBED_CACHE:-$HOME/.cache/rondpoint-testbed}
kernels=${KERNELS:-"linux-image-cloud-amd64 linux-image-6.12-cloud-amd64"}
timeout_s=${TESTBED_TIMEOUT:-720}
keep_dir=${KEEP:-}
keep_which=""
if [ -n "$keep_dir" ]; then
    mkdir -p "$keep_dir"
    keep_which=fail
    [ "${KEEP_ALL:-0}" = 1 ] && keep_which=all
fi
mkdir -p "$cache"

say() { echo "testbed: $*" >&2; }

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v migratepages >/dev/null || need+=(numactl)
command -v stress-ng >/dev/null || need+=(stress-ng)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        say "missing ${need[*]}; run as root or install them"; exit 1
    fi
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Resolve a kernel metapackage to the image package it depends on, download and unpack it once.
kernel_image() {
    local meta=$1 pkg deb dir
    pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    if [ -z "$pkg" ]; then
        # No package lists (offline): use what is cached for this metapackage.
        pkg=$(cat "$cache/$meta.resolved" 2>/dev/null || true)
        [ -n "$pkg" ] || { say "cannot resolve $meta and nothing is cached"; return 1; }
    fi
    echo "$pkg" > "$cache/$meta.resolved"
    dir="$cache/$pkg"
    if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
        say "downloading $pkg"
        (cd "$cache" && apt-get download -qq "$pkg" >/dev/null)
        deb=$(ls "$cache"/"${pkg}"_*.deb | head -1)
        rm -rf "$dir" && mkdir -p "$dir"
        dpkg-deb -x "$deb" "$dir"
        rm -f "$deb"
    fi
    ls "$dir"/boot/vmlinuz-* | head -1
}

say "building rondpoint and the workloads"
# shellcheck source=../scripts/build-profile
. "$repo/scripts/build-profile"
pushd "$repo" >/dev/null
build_profile release rondpoint rondpoint-mgen
popd >/dev/null
bin=$bin_dir

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,lib,lib64,proc,sys,dev,tmp,etc}
cp /bin/busybox "$root/bin/busybox"
guest_bins=("$bin/rondpoint" "$bin/rondpoint-mgen" "$(command -v migratepages)" "$(command -v numactl)" "$(command -v stress-ng)")
cp "${guest_bins[@]}" "$root/bin/"
# The binaries are dynamically linked against glibc: copy their libraries in.
for b in "${guest_bins[@]}"; do
    ldd "$b" | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | while read -r lib; do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
done
cp "$here/guest-init.sh" "$root/init"
cp "$here/checks.sh" "$root/checks.sh"
chmod +x "$root/init" "$root/checks.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# Four nodes of one CPU and 512 MiB each; 16 for one hop, 32 between nodes 0 and 3.
numa=()
for n in 0 1 2 3; do
    numa+=(-object "memory-backend-ram,id=m$n,size=512M" -numa "node,nodeid=$n,cpus=$n,memdev=m$n")
done
for a in 0 1 2 3; do
    for b in 0 1 2 3; do
        [ "$a" -lt "$b" ] || continue
        d=16; { [ "$a" = 0 ] && [ "$b" = 3 ]; } && d=32
        numa+=(-numa "dist,src=$a,dst=$b,val=$d")
    done
done

# The guest's log, without the recordings' base64.
guest_log() { awk '/^RECORDING-BEGIN/ {print; on = 1; next} /^RECORDING-END/ {on = 0} !on' "$1" | cat -v; }

# The recordings a guest printed (checks.sh, keep_recording), saved into $keep_dir.
save_recordings() {
    local log=$1 name=$2 n=0 id
    while read -r id; do
        tr -d '\r' < "$log" | awk -v id="$id" '$1 == "RECORDING-BEGIN" && $2 == id {on = 1; next}
            on && /^RECORDING-END/ {on = 0} on {print}' | base64 -d | gunzip \
            > "$keep_dir/$name-$id.jsonl" || { say "recording $id of $name is damaged"; continue; }
        n=$((n + 1))
    done < <(grep -a '^RECORDING-BEGIN ' "$log" | tr -d '\r' | awk '{print $2}')
    say "$name: $n recordings saved in $keep_dir"
}

# Boots one kernel and runs the checks; its log in $work/NAME.log, its wall seconds in
# $work/NAME.took.
boot() {
    local vmlinuz=$1 name log start
    name=$(basename "$vmlinuz")
    log="$work/$name.log"
    start=$(date +%s)
    timeout "$timeout_s" qemu-system-x86_64 -accel tcg,thread=single -m 2G -smp 4 -nographic -no-reboot \
        -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 transparent_hugepage=madvise rondpoint.checks=${CHECKS:-all} rondpoint.verbose=${VERBOSE:-0} rondpoint.repeat=${REPEAT:-1}${keep_which:+ rondpoint.keep=$keep_which}" \
        "${numa[@]}" >"$log" 2>&1 || true
    echo $(( $(date +%s) - start )) > "$work/$name.took"
}

# Each guest runs on one host thread (single-threaded TCG), so the kernels boot side by side,
# TESTBED_JOBS at a time (default 2), and report in the order given.
jobs_max=${TESTBED_JOBS:-2}
images=()
for meta in $kernels; do
    images+=("$(kernel_image "$meta")")
done
running=0
for vmlinuz in "${images[@]}"; do
    if [ "$running" -ge "$jobs_max" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    say "booting $(basename "$vmlinuz") with 4 NUMA nodes"
    boot "$vmlinuz" &
    running=$((running + 1))
done
wait || true

failed=0
for vmlinuz in "${images[@]}"; do
    name=$(basename "$vmlinuz")
    log="$work/$name.log"
    took=$(cat "$work/$name.took" 2>/dev/null || echo "?")
    result=$(grep -a -E '^TESTBED: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || true)
    if [ -z "$result" ]; then
        say "$name: no result line after ${took}s; guest log:"
        guest_log "$log" >&2
        failed=1
        continue
    fi
    [ -n "$keep_dir" ] && save_recordings "$log" "$name"
    grep -a -E '^(ok|FAIL|skip|retry) ' "$log" | sed "s/^/  [$name] /" >&2 || true
    grep -a -E '^bench ' "$log" | tr -d '\r' | sed "s/^/  [$name] /" >&2 || true
    # Each check's time, on one line.
    echo "  [$name] times: $(grep -a -E '^time ' "$log" | tr -d '\r' | awk '{printf "%s %s, ", $2, $3}')" >&2
    if echo "$result" | grep -q '^TESTBED: 0 passed, 0 failed' && [ "${CHECKS:-all}" != bench ]; then
        say "$name: no check ran (CHECKS=${CHECKS:-all}); guest log:"
        guest_log "$log" >&2
        failed=1
    elif ! echo "$result" | grep -q ' 0 failed'; then
        say "$name: $result; guest log:"
        guest_log "$log" >&2
        failed=1
    else
        say "$name: $result (${took}s)"
        [ "${VERBOSE:-0}" = 1 ] && guest_log "$log" >&2
    fi
    # One line cargo's and CI's readers recognise.
    echo "testbed $name: ${result#TESTBED: }"
done
exit $failed
