# launch/env.sh — environment presets for egg_mgpu under mpirun.
#
# Sourced by launch/egg_local.sh and launch/egg_hosts.sh (you can also source it
# yourself before a hand-written mpirun). Every variable keeps the value it
# already has in the caller's environment; set it there to override, or set it
# to the empty string to leave it out ("NCCL_DEBUG= launch/egg_local.sh ..." ).
#
# After sourcing, EGG_ENV_VARS lists the variables that are set; the launchers
# pass each one to every rank with `mpirun -x NAME` (needed on remote nodes,
# where ranks do not inherit the launching shell's environment).

# ---------------------------------------------------------------- NCCL
# The data plane between GPUs (fitness all-gather with --exchange nccl).
#
# NVLink SHARP / multicast ("NVLS") needs the fabric manager and an IMEX set-up
# that most hosts and containers lack; with it on, NCCL init can hang or fail.
# The fitness exchange is a few bytes per step, so NVLS buys nothing: keep it off.
: "${NCCL_NVLS_ENABLE=0}"
# WARN prints only problems. INFO shows the rings, transports (NVL, P2P, SHM,
# NET/IB, NET/Socket) and the interfaces chosen: use it when a job hangs at
# start or is slow. NCCL_DEBUG_SUBSYS=INIT,NET narrows INFO down.
: "${NCCL_DEBUG=WARN}"
# NCCL_SOCKET_IFNAME: network interface for NCCL bootstrap and socket traffic,
# e.g. eth0, ib0, or ^docker,lo (exclude). Unset: NCCL picks (it skips lo and
# docker*). Set it when nodes have several NICs and NCCL picks an unroutable one.
: "${NCCL_SOCKET_IFNAME=}"
# InfiniBand / RoCE. Unset = NCCL's auto-detection, which is right on most
# clusters. NCCL_IB_DISABLE=1 forces TCP sockets (no IB, or a broken fabric);
# NCCL_IB_HCA=mlx5_0,mlx5_1 picks adapters; NCCL_IB_GID_INDEX=3 is the usual
# RoCE v2 GID; NCCL_IB_TIMEOUT=22 for long-haul or congested fabrics.
: "${NCCL_IB_DISABLE=}"
: "${NCCL_IB_HCA=}"
: "${NCCL_IB_GID_INDEX=}"
: "${NCCL_IB_TIMEOUT=}"
# GeForce cards (RTX 4090 and the like) have PCIe peer-to-peer disabled, and
# some driver / IOMMU combinations still advertise it, so NCCL hangs at its
# first collective: NCCL_P2P_DISABLE=1 makes it go through host memory (SHM).
# (Or skip NCCL with egg's --exchange mpi: the exchange is a few bytes.)
: "${NCCL_P2P_DISABLE=}"
# RCCL (AMD) reads the same NCCL_* names.

# ------------------------------------------------------------ Open MPI
# MPI starts the ranks and carries the fitness exchange when NCCL does not
# (CPU ranks, --exchange mpi, ranks sharing a GPU), plus the replica checks.
#
# BTL: the byte transports of the ob1 PML. Unset = Open MPI's default (on
# Debian/Ubuntu /etc/openmpi/openmpi-mca-params.conf already drops openib, ofi
# and uct). Setting it replaces that list, so name what you want, e.g.
# self,vader,tcp (one node or a TCP cluster; starts fast), or ^openib,ofi.
# (A bare ^openib re-enables the ofi BTL, whose probing adds ~1.5 s per start.)
: "${OMPI_MCA_btl=}"
# BTL TCP interface, e.g. eth0 or 10.0.0.0/16 (else Open MPI tries every one).
: "${OMPI_MCA_btl_tcp_if_include=}"
# Containers without CAP_SYS_PTRACE cannot use cross-memory attach (CMA): the
# shared-memory BTL then fails with "Read -1, expected N, errno = 1". Copying
# through the shared segment is as fast for our few-byte messages. (Open MPI 5
# names this BTL sm: OMPI_MCA_btl_sm_single_copy_mechanism.)
: "${OMPI_MCA_btl_vader_single_copy_mechanism=none}"
# PML: unset = Open MPI chooses (ucx when built with it and a fabric is found,
# else ob1). On InfiniBand clusters OMPI_MCA_pml=ucx; to rule UCX out while
# debugging, OMPI_MCA_pml=ob1.
: "${OMPI_MCA_pml=}"
# Tear-down grace, in seconds (Open MPI's default: 1). When mpirun gets SIGTERM
# or a rank dies, Open MPI sends the ranks SIGCONT, waits this long, sends
# SIGTERM, waits as long again, then SIGKILL; mpirun then exits 1 even when
# every rank stopped cleanly. Raise it if SIGTERM to mpirun must leave time for
# a big model's final checkpoint (a crash then takes twice as long to clean up);
# better, stop a job with SIGUSR1 to mpirun: forwarded at once, the ranks
# finish the step, checkpoint and exit 0.
: "${OMPI_MCA_odls_base_sigkill_timeout=}"

# ----------------------------------------------------------------- UCX
# UCX_TLS: transports UCX may use. Unset = all it finds. rc,sm,self for
# InfiniBand; tcp,sm,self where RDMA is absent or broken.
: "${UCX_TLS=}"
# UCX_NET_DEVICES=mlx5_0:1 pins the adapter and port.
: "${UCX_NET_DEVICES=}"

# ------------------------------------------------------------- threads
# OpenMP threads per rank. The launchers set it to cores / ranks when you have
# not (CPU ranks are also bound to that many cores, and egg's --threads 0
# uses the cores a rank is bound to). GPU ranks need few host threads.
: "${OMP_NUM_THREADS=}"
# OMP_PROC_BIND=close keeps a rank's threads on the cores it was given.
: "${OMP_PROC_BIND=}"

EGG_ENV_VARS=""
for _egg_v in NCCL_NVLS_ENABLE NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_SOCKET_IFNAME NCCL_IB_DISABLE NCCL_IB_HCA \
    NCCL_IB_GID_INDEX NCCL_IB_TIMEOUT NCCL_P2P_DISABLE OMPI_MCA_btl OMPI_MCA_btl_tcp_if_include \
    OMPI_MCA_btl_vader_single_copy_mechanism OMPI_MCA_pml OMPI_MCA_odls_base_sigkill_timeout \
    UCX_TLS UCX_NET_DEVICES OMP_NUM_THREADS OMP_PROC_BIND; do
    if [ -n "${!_egg_v-}" ]; then
        export "${_egg_v?}"
        EGG_ENV_VARS="$EGG_ENV_VARS $_egg_v"
    else
        unset "$_egg_v"
    fi
done
# GPU visibility goes along whenever it is set, even empty (= no GPU: CPU ranks)
for _egg_v in CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES; do
    if [ "${!_egg_v+set}" = set ]; then
        export "${_egg_v?}"
        EGG_ENV_VARS="$EGG_ENV_VARS $_egg_v"
    fi
done
unset _egg_v
EGG_ENV_VARS="${EGG_ENV_VARS# }"
