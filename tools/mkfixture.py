#!/usr/bin/env python3
"""Generate the fake sysfs trees under fixtures/sysfs/ used by rondpoint's
topology-discovery tests.

    python3 tools/mkfixture.py            # regenerate every tree
    python3 tools/mkfixture.py r905-asymmetric xeon-2s-cxl   # only these

Each tree plays the role of /sys, e.g.
fixtures/sysfs/r905-asymmetric/devices/system/node/online.
The script removes and rewrites each tree and rewrites fixtures/sysfs/SOURCES.md
plus <tree>/SOURCE.md.  Output is deterministic (no clocks, no randomness).

Python 3.11, standard library only.

Every number below carries a comment saying where it comes from:
  [S:<key>]  sourced; <key> is a reference listed in REFS (seen while writing this)
  [C]        chosen by us, plausible for the reason given next to it
  [I]        inferred from sourced facts (the reasoning is given)
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "sysfs"

GIB_KB = 1024 * 1024  # kB per GiB

# ---------------------------------------------------------------------------
# References (cited by key in the comments and in SOURCES.md)
# ---------------------------------------------------------------------------
REFS = {
    "vm": "Read from /sys on the VM this generator was written on (AMD EPYC guest, "
          "2 vCPUs, 1 node, kernel 6.18): /sys/devices/system/node/*, "
          "/sys/devices/system/cpu/cpu{0,1}/{topology,cache}.",
    "gaud": "Gaud et al., 'Scheduling Applications on NUMA Multicore Platforms with an "
            "Asymmetric Interconnect Topology', section 2.1 and Figure 1 "
            "(seed [Gaud10]): Dell PowerEdge R905, 4 x Opteron 8380, "
            "4 cores @2.5 GHz, private L1 64 KB / L2 512 KB, shared 6 MB L3 per "
            "processor, 32 GB DDR2 = 8 GB per node, HT links 0-1 0-2 1-2 1-3 2-3, no 0-3.",
    "opteron-slit": "github.com/larsbergstrom/NUMA-STREAM, file stream-pthreads.c "
                    "(comment block): an 8-node AMD Opteron (48 threads) "
                    "`numactl --hardware` matrix using 10 local, 16 one HT hop, 22 two "
                    "HT hops (e.g. row 0: `10 16 16 22 16 22 16 22`).",
    "opteron-6272": "github.com/memtest86plus/memtest86plus issue #346 (comment by "
                    "Nable80, 2024-11-11): 2 x Opteron 6272, 4 nodes, all remote = 16 "
                    "(fully connected, one hop).",
    "lkml-6248": "LKML/netdev, 'Re: [PATCH v6] lib: optimize cpumask_local_spread()', "
                 "Shaokun Zhang, 2020-11-13, Message-ID "
                 "<eec4c1b6-8dad-9d07-7ef4-f0fbdcff1785@hisilicon.com> "
                 "(https://lore.kernel.org/all/eec4c1b6-8dad-9d07-7ef4-f0fbdcff1785@hisilicon.com/): "
                 "`numactl -H` of an 'intel 6248 platform' with SNC on: 4 nodes, node "
                 "cpulists, node sizes/free in MB, distances 10/11/21.",
    "pdc-dardel": "github.com/PDC-support/pdc-intro, episodes/infrastructure.md "
                  "('Introduction to Dardel supercomputer'): node = 2 x AMD EPYC 7742 "
                  "(64 cores, 2.25 GHz), 8 NUMA domains of 16 cores, `numactl --hardware` "
                  "node 0 cpus 0-15,128-143 size 31620 MB free 30673 MB, node 7 cpus "
                  "112-127,240-255 size 32246 MB free 31375 MB, distances 10/12/32; "
                  "thin nodes have 256 GB.",
    "alcf-crux": "github.com/argonne-lcf/user-guides, docs/crux/hardware-overview/"
                 "machine-overview.md: 2 x EPYC 7742, NUMA 0 = cores 0-15,128-143 ... "
                 "NUMA 7 = 112-127,240-255 (same numbering as Dardel).",
    "scargall-cxl": "Steve Scargall, 'How To Map a CXL Endpoint to a CPU Socket in Linux', "
                    "stevescargall.com, 2022-12-27: 2-socket host, `numactl -H` with node 0 "
                    "cpus 0-51,104-155 (64167 MB, free 62245), node 1 cpus 52-103,156-207 "
                    "(64472 MB, free 61391), CPU-less node 2 (65536 MB, free 65535; CXL "
                    "device 38:00.0, numa_node 0 = socket 0) and node 3 (131072 MB, on "
                    "socket 1); distances rows `10 21 14 24 / 21 10 24 14 / 14 24 10 26 / "
                    "24 14 26 10`.",
    "apsys21": "Choe, Kim, Ahn, 'Rethinking Remote Memory Placement on Large-Memory "
               "Systems with Path Diversity' (APSys'21), Table 1 (seed "
               "[Choe21]): AWS m5a.24xlarge, 6 nodes, EPYC 7571, node 0 "
               "distances `10 16 16 32 32 32`.",
    "naples-slit": "github.com/WyvernTKC/cpuminer-gr-avx2 issue #22: dual EPYC 7551 "
                   "(Naples), 8 nodes, `numactl -H` distances 10 local, 16 same socket, "
                   "32 other socket.",
    "numaperf": "Linux Documentation/admin-guide/mm/numaperf.rst: access0 = best "
                "initiators of any type, access1 = CPU initiators only; latency in "
                "nanoseconds, bandwidth in MiB/s; initiators/targets symlinks.",
}

# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def cpulist(cpus) -> str:
    """Format a set of ints the way the kernel's %*pbl does: '0-3,64-67'."""
    s = sorted(set(cpus))
    out = []
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ",".join(out)


def parse_list(text: str) -> list[int]:
    out = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def meminfo(node: int, total: int, free: int, *, hp_total: int = 0, hp_free: int = 0,
            has_cpus: bool = True) -> str:
    """Synthesize a kernel-format nodeN/meminfo.  MemTotal/MemFree come from the
    machine spec; the breakdown of MemUsed is [C] (fixed fractions chosen to look
    like a lightly loaded server: ~45% page cache, ~30% anon, ~6% slab), rounded to
    4 kB pages.  MemUsed = MemTotal - MemFree exactly, as the kernel computes it."""
    def pg(x: float) -> int:
        return int(x) // 4 * 4

    used = total - free
    file_pages = pg(used * 0.45)
    shmem = pg(file_pages * 0.03)
    anon = pg(used * 0.30)
    act_file = pg((file_pages - shmem) * 0.40)
    inact_file = (file_pages - shmem) - act_file
    act_anon = pg((anon + shmem) * 0.15)
    inact_anon = (anon + shmem) - act_anon
    slab = pg(used * 0.06)
    srecl = pg(slab * 0.40)
    kstack = pg(used * 0.004) if has_cpus else 0
    ptables = pg(used * 0.01)
    mapped = pg(file_pages * 0.08)
    rows = [
        ("MemTotal:", total), ("MemFree:", free), ("MemUsed:", used),
        ("SwapCached:", 0),
        ("Active:", act_anon + act_file), ("Inactive:", inact_anon + inact_file),
        ("Active(anon):", act_anon), ("Inactive(anon):", inact_anon),
        ("Active(file):", act_file), ("Inactive(file):", inact_file),
        ("Unevictable:", 0), ("Mlocked:", 0), ("Dirty:", pg(file_pages * 0.001)),
        ("Writeback:", 0), ("FilePages:", file_pages), ("Mapped:", mapped),
        ("AnonPages:", anon), ("Shmem:", shmem), ("KernelStack:", kstack),
        ("PageTables:", ptables), ("SecPageTables:", 0), ("NFS_Unstable:", 0),
        ("Bounce:", 0), ("WritebackTmp:", 0), ("KReclaimable:", srecl),
        ("Slab:", slab), ("SReclaimable:", srecl), ("SUnreclaim:", slab - srecl),
        ("AnonHugePages:", 0), ("ShmemHugePages:", 0), ("ShmemPmdMapped:", 0),
        ("FileHugePages:", 0), ("FilePmdMapped:", 0),
    ]
    # drivers/base/node.c: "Node %d MemTotal:       %8lu kB\n" (label padded to 16)
    text = "".join(f"Node {node} {lab:<16}{val:>8} kB\n" for lab, val in rows)
    # "Node %d HugePages_Total: %5u\n", "Node %d HugePages_Free:  %5u\n"
    for lab, val in (("HugePages_Total:", hp_total), ("HugePages_Free:", hp_free),
                     ("HugePages_Surp:", 0)):
        text += f"Node {node} {lab:<17}{val:>5}\n"
    return text


def cpu_entry(cpu, package, core_id, node, l3_key):
    return {"cpu": cpu, "package": package, "core": core_id, "node": node, "l3": l3_key}


# ---------------------------------------------------------------------------
# Machine specs
# ---------------------------------------------------------------------------
# Each machine: name, title, nodes {id: {mem_total_kb, mem_free_kb, ...}},
# distance matrix, cpus [cpu_entry...], caches (L1d, L1i, L2, L3 sizes), node
# state overrides, optional hmat, and provenance notes for SOURCES.md.


def m_vm_1node():
    # Everything here was read from this VM's /sys [S:vm].
    meminfo_text = (  # verbatim snapshot of /sys/devices/system/node/node0/meminfo [S:vm]
        "Node 0 MemTotal:        3893460 kB\n"
        "Node 0 MemFree:         3746576 kB\n"
        "Node 0 MemUsed:          146884 kB\n"
        "Node 0 SwapCached:            0 kB\n"
        "Node 0 Active:            26500 kB\n"
        "Node 0 Inactive:          40972 kB\n"
        "Node 0 Active(anon):       1512 kB\n"
        "Node 0 Inactive(anon):     2724 kB\n"
        "Node 0 Active(file):      24988 kB\n"
        "Node 0 Inactive(file):    38248 kB\n"
        "Node 0 Unevictable:       11244 kB\n"
        "Node 0 Mlocked:           10332 kB\n"
        "Node 0 Dirty:                72 kB\n"
        "Node 0 Writeback:             0 kB\n"
        "Node 0 FilePages:         72100 kB\n"
        "Node 0 Mapped:            10684 kB\n"
        "Node 0 AnonPages:          6724 kB\n"
        "Node 0 Shmem:              8856 kB\n"
        "Node 0 KernelStack:        1316 kB\n"
        "Node 0 PageTables:          980 kB\n"
        "Node 0 SecPageTables:         0 kB\n"
        "Node 0 NFS_Unstable:          0 kB\n"
        "Node 0 Bounce:                0 kB\n"
        "Node 0 WritebackTmp:          0 kB\n"
        "Node 0 KReclaimable:      12788 kB\n"
        "Node 0 Slab:              32404 kB\n"
        "Node 0 SReclaimable:      12788 kB\n"
        "Node 0 SUnreclaim:        19616 kB\n"
        "Node 0 AnonHugePages:         0 kB\n"
        "Node 0 ShmemHugePages:        0 kB\n"
        "Node 0 ShmemPmdMapped:        0 kB\n"
        "Node 0 FileHugePages:         0 kB\n"
        "Node 0 FilePmdMapped:         0 kB\n"
        "Node 0 HugePages_Total:     0\n"
        "Node 0 HugePages_Free:      0\n"
        "Node 0 HugePages_Surp:      0\n"
    )
    cpus = [
        cpu_entry(0, 0, 0, 0, 0),  # package 0, core_id 0, thread_siblings_list 0 [S:vm]
        cpu_entry(1, 0, 1, 0, 0),  # package 0, core_id 1, thread_siblings_list 1 [S:vm]
    ]
    return {
        "name": "vm-1node",
        "title": "1-node VM (the VM this generator was written on)",
        "nodes": {0: {"meminfo_raw": meminfo_text, "nominal": None}},
        "distance": [[10]],  # [S:vm]
        "cpus": cpus,
        # sizes as read from cpu0/cache/index{0..3}/size [S:vm]
        "caches": {"L1d": "48K", "L1i": "32K", "L2": "1024K", "L3": "32768K"},
        "extra_node_files": {"has_generic_initiator": ""},  # present, empty [S:vm]
        "notes": [
            "Node files, cpu online/possible/present, per-CPU topology and cache files "
            "copied from the VM's /sys [S:vm]: 2 vCPUs, node 0 cpulist 0-1, distance "
            "`10`, L1d 48K / L1i 32K / L2 1024K private, L3 32768K shared by 0-1, "
            "core_id 0 and 1, no SMT siblings.",
            "meminfo is a verbatim snapshot taken once (values drift on a live VM) [S:vm].",
            "has_generic_initiator exists (empty) on this kernel and is kept [S:vm]. "
            "The VM has no HMAT (no access0 directory) [S:vm].",
            "Not copied: node0/cpuN links, memoryN blocks, hugepages/, numastat, "
            "vmstat and the other topology/cache attributes (not used by rondpoint).",
        ],
    }


def m_xeon_snc2_2s():
    # 2 x Intel Xeon Gold 6248 (Cascade Lake): 20 cores, HT -> 80 CPUs, SNC2 -> 4 nodes.
    # Node cpulists exactly as printed by numactl -H on the 6248 SNC machine [S:lkml-6248].
    node_cpus = {
        0: "0 1 2 5 6 10 11 12 15 16 40 41 42 45 46 50 51 52 55 56",        # [S:lkml-6248]
        1: "3 4 7 8 9 13 14 17 18 19 43 44 47 48 49 53 54 57 58 59",        # [S:lkml-6248]
        2: "20 21 22 25 26 30 31 32 35 36 60 61 62 65 66 70 71 72 75 76",   # [S:lkml-6248]
        3: "23 24 27 28 29 33 34 37 38 39 63 64 67 68 69 73 74 77 78 79",   # [S:lkml-6248]
    }
    cpu_node = {c: n for n, s in node_cpus.items() for c in parse_list(s)}
    cores_per_socket = 20  # Xeon Gold 6248: 20 cores (Intel spec; matches 80 CPUs above)
    ncores = 2 * cores_per_socket
    cpus = []
    for cpu in range(2 * ncores):
        phys = cpu % ncores              # HT sibling of k is k+40 (Linux numbering) [S:lkml-6248]
        pkg = phys // cores_per_socket   # cpus 0-19,40-59 socket 0 (nodes 0,1) [I: SNC pairs 0-1, 2-3]
        core = phys % cores_per_socket   # [C] dense core_id 0..19 (real CLX ids are sparse)
        cpus.append(cpu_entry(cpu, pkg, core, cpu_node[cpu], pkg))  # L3 spans the socket
    nodes = {
        # numactl size/free in MB x 1024 [S:lkml-6248]; nominal 48 GiB/node =
        # 192 GB = 12 x 16 GB DIMMs [I: 4 x ~48 GB]
        0: {"total_mb": 46893, "free_mb": 45982, "nominal": 48},
        1: {"total_mb": 48379, "free_mb": 48235, "nominal": 48},
        2: {"total_mb": 48353, "free_mb": 48022, "nominal": 48},
        3: {"total_mb": 48378, "free_mb": 48196, "nominal": 48},
    }
    return {
        "name": "xeon-snc2-2s",
        "title": "2 x Intel Xeon Gold 6248 (Cascade Lake), SNC2 on, 4 nodes",
        "nodes": nodes,
        "distance": [          # [S:lkml-6248]
            [10, 11, 21, 21],
            [11, 10, 21, 21],
            [21, 21, 10, 11],
            [21, 21, 11, 10],
        ],
        "cpus": cpus,
        # Cascade Lake-SP: 32K L1d, 32K L1i, 1 MB L2 per core; 6248 L3 27.5 MB per
        # socket (= 28160K).  Intel published specs, from memory, not re-checked here.
        "caches": {"L1d": "32K", "L1i": "32K", "L2": "1024K", "L3": "28160K"},
        "notes": [
            "Node cpulists, sizes and free memory (MB) and the SLIT are from a real "
            "`numactl -H` of an Intel Xeon 6248 machine with SNC enabled [S:lkml-6248]. "
            "The numbering is the real interleaved SNC one (node 0 = 0-2,5-6,10-12,...), "
            "which is a useful test of non-contiguous cpulists.",
            "SKU = Xeon Gold 6248 (20 cores, HT): the post says 'intel 6248 platform'; "
            "core count is Intel's spec and matches the 80 CPUs listed.",
            "Sockets: nodes 0,1 = package 0 (cpus 0-19,40-59), nodes 2,3 = package 1 "
            "[I: the distance-11 pairs and the cpulists].",
            "core_id: chosen dense 0..19 per package [C] (real Cascade Lake core_ids are "
            "sparse; rondpoint must not depend on them being dense anyway).",
            "L3 shared_cpu_list = the whole socket (0-19,40-59 / 20-39,60-79): on SNC the "
            "sysfs L3 still spans the socket. Cache sizes are Intel's published "
            "Cascade Lake figures, not re-checked in this session.",
            "MemTotal = numactl MB x 1024 (low-order kB lost in MB rounding) [S]; "
            "meminfo breakdown chosen [C]. No HMAT (no public values found) [C].",
        ],
    }


def m_r905():
    # Dell PowerEdge R905: 4 x Opteron 8380, 4 cores, no SMT, 1 node per socket [S:gaud].
    cpus = []
    for cpu in range(16):
        node = cpu // 4  # [C] contiguous numbering: node n = cpus 4n..4n+3
        cpus.append(cpu_entry(cpu, node, cpu % 4, node, node))  # L3 shared per processor [S:gaud]
    nodes = {
        # 8 GB DDR2 per node [S:gaud]; MemTotal ~97-98 % of 8 GiB and free memory [C]
        0: {"total_kb": 8127124, "free_kb": 6412380, "nominal": 8},
        1: {"total_kb": 8256752, "free_kb": 7350236, "nominal": 8},
        2: {"total_kb": 8256752, "free_kb": 7298812, "nominal": 8},
        3: {"total_kb": 8240364, "free_kb": 7516020, "nominal": 8},
    }
    # SLIT: 10 local, 16 one HT hop, 22 two hops (AMD BIOS convention seen in
    # [S:opteron-slit]); only 0<->3 is two hops because there is no 0-3 link [S:gaud].
    dist = [
        [10, 16, 16, 22],
        [16, 10, 16, 16],
        [16, 16, 10, 16],
        [22, 16, 16, 10],
    ]
    return {
        "name": "r905-asymmetric",
        "title": "Dell PowerEdge R905, 4 x AMD Opteron 8380 (asymmetric HT)",
        "nodes": nodes,
        "distance": dist,
        "cpus": cpus,
        # private L1 64 KB (data; the 64 KB L1i is the same size on K10), L2 512 KB,
        # shared 6 MB L3 per processor [S:gaud]
        "caches": {"L1d": "64K", "L1i": "64K", "L2": "512K", "L3": "6144K"},
        "notes": [
            "4 nodes x 4 cores, 2.5 GHz, no SMT, 8 GB DDR2 per node, L1 64 KB, L2 512 KB "
            "private, 6 MB L3 shared by the 4 cores of a processor [S:gaud]. The paper's "
            "'64 KB L1' is taken as 64 KB data + 64 KB instruction (K10 core).",
            "HT links 0-1, 0-2, 1-2, 1-3, 2-3; no 0-3 link [S:gaud]. The paper gives no "
            "SLIT. Distances follow the AMD hop convention (10 local / 16 one hop / "
            "22 two hops) seen in a published 8-node Opteron numactl matrix "
            "[S:opteron-slit] (and 16 for one hop in [S:opteron-6272]); so 0<->3 = 22, "
            "every other remote pair 16 [I].",
            "CPU numbering 0-3 node 0, 4-7 node 1, ... [C] (the usual Linux order on "
            "these boards; not given by the paper). core_id 0-3 per package [C].",
            "MemTotal ~97-98 % of 8 GiB, node 0 lowest (kernel, low-memory holes) and "
            "MemFree [C]. No HMAT (2009-era platform, no HMAT) [C].",
        ],
    }


def m_epyc_nps4():
    # 2 x AMD EPYC 7742 (Rome), 64 cores, SMT2 -> 256 CPUs, NPS4 -> 8 nodes.
    # Numbering: node n = cores 16n..16n+15 and SMT siblings +128 [S:pdc-dardel][S:alcf-crux].
    cpus = []
    for cpu in range(256):
        phys = cpu % 128
        pkg = phys // 64
        node = phys // 16
        core = phys % 64            # [C] dense core_id 0..63 per package
        ccx = phys // 4             # Rome: 4 cores per CCX share one 16 MB L3 [Zen 2 spec]
        cpus.append(cpu_entry(cpu, pkg, core, node, ccx))
    nodes = {}
    for n in range(8):
        nodes[n] = {"total_mb": 32251, "free_mb": 31290 + 17 * n, "nominal": 32}  # [C] like node 7
    nodes[0] = {"total_mb": 31620, "free_mb": 30673, "nominal": 32}  # [S:pdc-dardel]
    nodes[7] = {"total_mb": 32246, "free_mb": 31375, "nominal": 32}  # [S:pdc-dardel]
    dist = [[10 if i == j else (12 if i // 4 == j // 4 else 32) for j in range(8)]
            for i in range(8)]  # [S:pdc-dardel]
    return {
        "name": "epyc-nps4-2s",
        "title": "2 x AMD EPYC 7742 (Rome), NPS4, 8 nodes",
        "nodes": nodes,
        "distance": dist,
        "cpus": cpus,
        # Zen 2: 32K L1d, 32K L1i, 512K L2 per core, 16 MB L3 per 4-core CCX
        # (AMD published figures, not re-checked in this session)
        "caches": {"L1d": "32K", "L1i": "32K", "L2": "512K", "L3": "16384K"},
        "notes": [
            "Machine = a PDC Dardel CPU node (HPE Cray EX, 2 x EPYC 7742, 256 GB): "
            "8 NUMA nodes of 16 cores, node 0 cpus 0-15,128-143 ... node 7 "
            "112-127,240-255, SLIT 10 / 12 same socket / 32 other socket [S:pdc-dardel]; "
            "the same cpulists are documented for ALCF Crux (2 x 7742) [S:alcf-crux].",
            "Node 0 MemTotal 31620 MB / free 30673 MB and node 7 32246 / 31375 MB "
            "[S:pdc-dardel]; nodes 1-6 set to 32251 MB with slightly varying free [C] "
            "(the slide elides them). Nominal 32 GiB per node = 256 GB / 8.",
            "L3 per CCX: 4 cores / 8 threads share 16 MB, e.g. cpus 0-3,128-131 "
            "(Zen 2 CCX; AMD's published figures, not re-checked here). L1d/L1i 32K, "
            "L2 512K private. core_id dense 0..63 per package [C].",
            "No HMAT: no public EPYC HMAT dump was found [C].",
        ],
    }


def m_xeon_cxl():
    # 2-socket Sapphire Rapids, 52 cores/socket, HT, plus CPU-less CXL node 2 on socket 0.
    # Cpulists, sizes, free memory and SLIT from a published numactl -H [S:scargall-cxl];
    # that host also had node 3 (128 GB CXL on socket 1), dropped here to keep 3 nodes.
    cpus = []
    for cpu in range(208):
        phys = cpu % 104            # node 0 = 0-51,104-155; node 1 = 52-103,156-207 [S:scargall-cxl]
        pkg = phys // 52
        cpus.append(cpu_entry(cpu, pkg, phys % 52, pkg, pkg))  # [C] dense core_id; L3 per socket
    nodes = {
        0: {"total_mb": 64167, "free_mb": 62245, "nominal": 64},   # [S:scargall-cxl]
        1: {"total_mb": 64472, "free_mb": 61391, "nominal": 64},   # [S:scargall-cxl]
        2: {"total_mb": 65536, "free_mb": 65535, "nominal": 64},   # CXL, whole device [S:scargall-cxl]
    }
    dist = [                     # rows/cols 0-2 of the published 4x4 matrix [S:scargall-cxl]
        [10, 21, 14],
        [21, 10, 24],
        [14, 24, 10],
    ]
    # HMAT best-initiator values [C], in numaperf units [S:numaperf]:
    # latency ns, bandwidth MiB/s.  Values chosen inside published ranges for
    # SPR DDR5 (local ~115-130 ns, ~80 GB/s per socket) and SPR + CXL Type-3
    # expanders (~250-270 ns from the local socket, ~27-31 GB/s); NOT taken from
    # a specific paper table (none was read in this session).
    dram = {"read_latency": 118, "write_latency": 126,          # [C]
            "read_bandwidth": 76294, "write_bandwidth": 57220}  # [C] 80 GB/s, 60 GB/s
    cxl = {"read_latency": 258, "write_latency": 266,           # [C]
           "read_bandwidth": 28610, "write_bandwidth": 26703}   # [C] 30 GB/s, 28 GB/s
    hmat = {
        # target: (best initiator nodes, attributes); same for access0 and access1
        # because the machine has no generic initiators (all initiators are CPUs).
        0: ([0], dram),
        1: ([1], dram),
        2: ([0], cxl),   # CXL device's root port is on socket 0 [S:scargall-cxl]
    }
    return {
        "name": "xeon-2s-cxl",
        "title": "2 x Intel Xeon Sapphire Rapids (52 cores) + 64 GB CXL Type-3 node",
        "nodes": nodes,
        "distance": dist,
        "cpus": cpus,
        # SPR: 48K L1d, 32K L1i, 2 MB L2 per core; Platinum 8470 L3 105 MB = 107520K
        # (Intel published figures, not re-checked in this session)
        "caches": {"L1d": "48K", "L1i": "32K", "L2": "2048K", "L3": "107520K"},
        "node_state": {"has_cpu": [0, 1], "has_memory": [0, 1, 2],
                       "has_normal_memory": [0, 1]},  # CXL onlined ZONE_MOVABLE [C]
        "extra_node_files": {"has_generic_initiator": ""},  # none on this host [C]
        "hmat": {"access0": hmat, "access1": hmat},
        "notes": [
            "Cpulists (node 0 = 0-51,104-155, node 1 = 52-103,156-207), node sizes/free "
            "memory and the SLIT are from Steve Scargall's published `numactl -H` of a "
            "2-socket CXL host [S:scargall-cxl]. That host had two CXL expanders "
            "(node 2, 64 GB, socket 0; node 3, 128 GB, socket 1); we keep nodes 0-2 and "
            "the 3x3 sub-matrix `10 21 14 / 21 10 24 / 14 24 10`.",
            "The blog does not name the CPU: 52 cores/socket + CXL => Sapphire Rapids; "
            "the SKU is chosen as Xeon Platinum 8470 (52 cores) [I]. Cache sizes are "
            "Intel's published SPR figures (48K/32K L1, 2 MB L2, 105 MB L3), not "
            "re-checked in this session. core_id dense 0..51 [C].",
            "Node 2 is CPU-less: cpulist is an empty line, has_cpu = 0-1, has_memory = "
            "0-2, has_normal_memory = 0-1 (CXL memory onlined as ZONE_MOVABLE, the "
            "usual default for daxctl/kmem) [C]. MemTotal 65536 MB = the whole 64 GiB "
            "device, as published [S:scargall-cxl].",
            "HMAT (access0 and access1 identical: no generic initiators): local DRAM "
            "read/write latency 118/126 ns, bandwidth 76294/57220 MiB/s (~80/60 GB/s); "
            "CXL node 2 from socket 0: 258/266 ns, 28610/26703 MiB/s (~30/28 GB/s). "
            "All CHOSEN [C] to sit inside the ranges stated in the project brief for "
            "SPR + CXL Type-3 memory (local DDR5 ~115-130 ns and ~80 GB/s per socket, "
            "CXL ~250-270 ns and ~27-31 GB/s from the attached socket), which the brief "
            "attributes to Pond, TPP and Sun et al., 'Demystifying CXL Memory with "
            "Genuine CXL-Ready Systems and Devices' (MICRO'23, arXiv 2303.15375). We "
            "located that paper but did not read its tables in this session, so no "
            "number here is attributed to a specific publication; no public HMAT dump "
            "of an SPR + CXL machine was found.",
            "Only the best initiator per target appears in sysfs [S:numaperf], so the "
            "remote values (socket 1 -> node 0 ~200 ns, socket 1 -> CXL ~360 ns) are "
            "not represented in the tree.",
        ],
    }


def m_aws_m5a():
    # AWS m5a.24xlarge: 96 vCPUs (48 cores x SMT2) of EPYC 7571, 6 nodes, 384 GiB [S:apsys21].
    cpus = []
    for cpu in range(96):
        phys = cpu % 48          # [C] siblings k and k+48 (Linux/ACPI order: first threads first)
        node = phys // 8         # [C] 8 cores (16 vCPUs) per node: node n = 8n..8n+7, 48+8n..
        pkg = node // 3          # nodes 0-2 socket 0, 3-5 socket 1 [I from the SLIT tiers]
        ccx = phys // 4          # Naples: 4 cores / 8 threads per CCX share 8 MB L3
        cpus.append(cpu_entry(cpu, pkg, phys % 24, node, ccx))  # [C] dense core_id per package
    nodes = {
        # 384 GiB / 6 = 64 GiB per node [I]; MemTotal ~97.5-98.4 % and MemFree [C]
        0: {"total_kb": 65421348, "free_kb": 58770112, "nominal": 64},
        1: {"total_kb": 66038204, "free_kb": 62981740, "nominal": 64},
        2: {"total_kb": 66038204, "free_kb": 63420388, "nominal": 64},
        3: {"total_kb": 66038204, "free_kb": 63108816, "nominal": 64},
        4: {"total_kb": 66038204, "free_kb": 63590300, "nominal": 64},
        5: {"total_kb": 66021820, "free_kb": 63012452, "nominal": 64},
    }
    dist = [[10 if i == j else (16 if i // 3 == j // 3 else 32) for j in range(6)]
            for i in range(6)]  # row 0 [S:apsys21]; other rows by symmetry [I][S:naples-slit]
    return {
        "name": "aws-m5a-24xlarge",
        "title": "AWS m5a.24xlarge, 96 vCPUs of AMD EPYC 7571 (Naples), 6 nodes",
        "nodes": nodes,
        "distance": dist,
        "cpus": cpus,
        # Zen 1: 32K L1d, 64K L1i, 512K L2 per core, 8 MB L3 per 4-core CCX
        # (AMD published figures, not re-checked in this session)
        "caches": {"L1d": "32K", "L1i": "64K", "L2": "512K", "L3": "8192K"},
        "notes": [
            "6 nodes, EPYC 7571, node 0 distance row `10 16 16 32 32 32` [S:apsys21]. "
            "96 vCPUs / 384 GiB is AWS's advertised m5a.24xlarge size as given in the "
            "project brief; the paper does not state it and it was not re-checked "
            "against AWS documentation in this session.",
            "Other rows are an INFERENCE: nodes 0-2 = socket 0, 3-5 = socket 1, 16 "
            "within a socket, 32 across, symmetric - the same tiers as a published "
            "dual EPYC 7551 (Naples) matrix [S:naples-slit] [I].",
            "CPU numbering CHOSEN [C]: 16 vCPUs per node, first hardware threads 0-47, "
            "SMT siblings +48 (the usual Linux/ACPI order), so node n = "
            "8n..8n+7,48+8n..48+8n+7 (node 0 = 0-7,48-55). Not verified on a real "
            "instance.",
            "L3 per CCX: 4 cores / 8 threads share 8 MB (e.g. 0-3,48-51) - Zen 1 "
            "figures; whether the hypervisor exposes exactly this in a guest's CPUID "
            "was not verified [C]. core_id dense 0..23 per package [C].",
            "64 GiB nominal per node (384/6); MemTotal and MemFree chosen [C]. No HMAT [C].",
        ],
    }


MACHINES = [m_vm_1node, m_xeon_snc2_2s, m_r905, m_epyc_nps4, m_xeon_cxl, m_aws_m5a]

# ---------------------------------------------------------------------------
# Tree writer
# ---------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(text)


def symlink(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def node_mem(spec: dict) -> tuple[int, int]:
    if "total_kb" in spec:
        return spec["total_kb"], spec["free_kb"]
    return spec["total_mb"] * 1024, spec["free_mb"] * 1024


def build(m: dict) -> None:
    tree = OUT / m["name"]
    if tree.exists():
        shutil.rmtree(tree)
    node_dir = tree / "devices" / "system" / "node"
    cpu_dir = tree / "devices" / "system" / "cpu"

    node_ids = sorted(m["nodes"])
    n_cpus = {n: sorted(c["cpu"] for c in m["cpus"] if c["node"] == n) for n in node_ids}
    all_cpus = sorted(c["cpu"] for c in m["cpus"])

    # --- node state files
    state = {
        "online": node_ids,
        "possible": node_ids,
        "has_cpu": [n for n in node_ids if n_cpus[n]],
        "has_memory": node_ids,
        "has_normal_memory": node_ids,
    }
    state.update(m.get("node_state", {}))
    for fname, ids in state.items():
        write(node_dir / fname, cpulist(ids) + "\n")
    for fname, text in m.get("extra_node_files", {}).items():
        write(node_dir / fname, text + "\n")

    # --- per node
    dist = m["distance"]
    assert len(dist) == len(node_ids)
    for i, n in enumerate(node_ids):
        assert dist[i][i] == 10 and all(dist[i][j] == dist[j][i] for j in range(len(dist)))
        d = node_dir / f"node{n}"
        write(d / "cpulist", cpulist(n_cpus[n]) + "\n")
        write(d / "distance", " ".join(str(x) for x in dist[i]) + "\n")
        spec = m["nodes"][n]
        if "meminfo_raw" in spec:
            write(d / "meminfo", spec["meminfo_raw"])
        else:
            total, free = node_mem(spec)
            write(d / "meminfo", meminfo(n, total, free, has_cpus=bool(n_cpus[n])))

    # --- HMAT (numaperf) access classes
    for access, table in sorted(m.get("hmat", {}).items()):
        for target, (inits, attrs) in sorted(table.items()):
            idir = node_dir / f"node{target}" / access / "initiators"
            for k in ("read_bandwidth", "read_latency", "write_bandwidth", "write_latency"):
                write(idir / k, f"{attrs[k]}\n")
            for ini in inits:
                symlink(idir / f"node{ini}", f"../../../node{ini}")
                symlink(node_dir / f"node{ini}" / access / "targets" / f"node{target}",
                        f"../../../node{target}")

    # --- cpu state files
    for fname in ("online", "possible", "present"):
        write(cpu_dir / fname, cpulist(all_cpus) + "\n")

    # --- per cpu topology + caches
    by_core: dict[tuple[int, int], list[int]] = {}
    by_l3: dict[object, list[int]] = {}
    for c in m["cpus"]:
        by_core.setdefault((c["package"], c["core"]), []).append(c["cpu"])
        by_l3.setdefault(c["l3"], []).append(c["cpu"])
    cz = m["caches"]
    for c in m["cpus"]:
        d = cpu_dir / f"cpu{c['cpu']}"
        sib = cpulist(by_core[(c["package"], c["core"])])
        write(d / "topology" / "physical_package_id", f"{c['package']}\n")
        write(d / "topology" / "core_id", f"{c['core']}\n")
        write(d / "topology" / "thread_siblings_list", sib + "\n")
        l3 = cpulist(by_l3[c["l3"]])
        for idx, (level, typ, size, shared) in enumerate((
                (1, "Data", cz["L1d"], sib),
                (1, "Instruction", cz["L1i"], sib),
                (2, "Unified", cz["L2"], sib),
                (3, "Unified", cz["L3"], l3))):
            cd = d / "cache" / f"index{idx}"
            write(cd / "level", f"{level}\n")
            write(cd / "type", f"{typ}\n")
            write(cd / "size", f"{size}\n")
            write(cd / "shared_cpu_list", f"{shared}\n")

    write(tree / "SOURCE.md", source_md(m, heading="#"))


# ---------------------------------------------------------------------------
# Provenance text
# ---------------------------------------------------------------------------


def source_md(m: dict, heading: str) -> str:
    node_ids = sorted(m["nodes"])
    n_cpus = {n: sorted(c["cpu"] for c in m["cpus"] if c["node"] == n) for n in node_ids}
    lines = [f"{heading} {m['name']}", "", f"{m['title']}.", ""]
    lines.append(f"- nodes: {len(node_ids)}; CPUs: {len(m['cpus'])}; "
                 f"CPU-less nodes: "
                 f"{', '.join(str(n) for n in node_ids if not n_cpus[n]) or 'none'}")
    lines.append("")
    lines.append("| node | cpulist | CPUs | MemTotal kB | MemFree kB | nominal |")
    lines.append("|---|---|---|---|---|---|")
    for n in node_ids:
        spec = m["nodes"][n]
        if "meminfo_raw" in spec:
            vals = {ln.split()[2]: ln.split()[3] for ln in spec["meminfo_raw"].splitlines()}
            total, free = vals["MemTotal:"], vals["MemFree:"]
            nominal = "(VM)"
        else:
            total, free = node_mem(spec)
            nominal = f"{spec['nominal']} GiB"
        cl = f"`{cpulist(n_cpus[n])}`" if n_cpus[n] else "(empty line)"
        lines.append(f"| {n} | {cl} | {len(n_cpus[n])} | {total} | "
                     f"{free} | {nominal} |")
    lines += ["", "Distance matrix (SLIT):", "", "```"]
    lines.append("node " + " ".join(f"{n:>3}" for n in node_ids))
    for i, n in enumerate(node_ids):
        lines.append(f"{n:>3}: " + " ".join(f"{x:>3}" for x in m["distance"][i]))
    lines.append("```")
    cz = m["caches"]
    l3groups = {}
    for c in m["cpus"]:
        l3groups.setdefault(c["l3"], []).append(c["cpu"])
    first = cpulist(next(iter(l3groups.values())))
    lines += ["", f"Caches: L1d {cz['L1d']}, L1i {cz['L1i']}, L2 {cz['L2']} per core; "
              f"L3 {cz['L3']} per LLC domain, {len(l3groups)} LLC domain(s) "
              f"(first: `{first}`).", ""]
    if "hmat" in m:
        lines += ["HMAT (initiators -> target; latency ns, bandwidth MiB/s):", "",
                  "| access | target | best initiators | read lat | write lat | read bw | write bw |",
                  "|---|---|---|---|---|---|---|"]
        for access, table in sorted(m["hmat"].items()):
            for t, (inits, a) in sorted(table.items()):
                lines.append(f"| {access} | {t} | {','.join(map(str, inits))} | "
                             f"{a['read_latency']} | {a['write_latency']} | "
                             f"{a['read_bandwidth']} | {a['write_bandwidth']} |")
        lines.append("")
    else:
        lines += ["HMAT: none.", ""]
    lines.append("Provenance ([S:key] = sourced, see References; [I] = inferred; "
                 "[C] = chosen):")
    lines.append("")
    for note in m["notes"]:
        lines.append(f"- {note}")
    used = sorted({k for k in REFS if f"[S:{k}]" in " ".join(m["notes"])})
    lines += ["", "References:", ""]
    for k in used:
        lines.append(f"- [S:{k}] {REFS[k]}")
    lines.append("")
    return "\n".join(lines)


def sources_md(machines: list[dict]) -> str:
    out = [
        "# Fixture sysfs trees: sources",
        "",
        "Generated by `python3 tools/mkfixture.py` (do not edit by hand; edit the "
        "generator). Each directory here plays the role of `/sys`.",
        "",
        "Files per tree: `devices/system/node/{online,possible,has_cpu,has_memory,"
        "has_normal_memory}`, `nodeN/{cpulist,distance,meminfo}`, HMAT "
        "`nodeN/accessK/initiators/{read,write}_{latency,bandwidth}` plus "
        "`initiators/nodeM` and `targets/nodeN` relative symlinks where the machine "
        "has HMAT, `devices/system/cpu/{online,possible,present}`, and per CPU "
        "`topology/{physical_package_id,core_id,thread_siblings_list}` and "
        "`cache/index{0..3}/{level,type,size,shared_cpu_list}` (index0 L1 Data, "
        "index1 L1 Instruction, index2 L2 Unified, index3 L3 Unified).",
        "",
        "Common conventions (all trees): meminfo lines other than MemTotal/MemFree "
        "(and MemUsed = MemTotal - MemFree) are synthesized from fixed fractions "
        "[C], except `vm-1node`, which is a verbatim copy; `possible` equals "
        "`online` for nodes and CPUs [C]; node `cpuN` links, memory blocks and other "
        "sysfs attributes are not included. Empty directories are never created "
        "(git would drop them), so e.g. a CPU-less node has no `accessK/targets`.",
        "",
        "Legend: [S:key] sourced (reference listed under the tree), [I] inferred "
        "from sourced facts, [C] chosen by us (plausible, reason given).",
        "",
    ]
    for m in machines:
        out.append(source_md(m, heading="##"))
    return "\n".join(out)


def main(argv: list[str]) -> int:
    machines = [f() for f in MACHINES]
    wanted = set(argv[1:])
    unknown = wanted - {m["name"] for m in machines}
    if unknown:
        print(f"unknown tree(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for m in machines:
        if not wanted or m["name"] in wanted:
            build(m)
            print(f"wrote {OUT.relative_to(ROOT) / m['name']}")
    write(OUT / "SOURCES.md", sources_md(machines))
    print(f"wrote {(OUT / 'SOURCES.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
