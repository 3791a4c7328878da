/* compat/nccl.h — RCCL stands in for NCCL in the HIP build (API-compatible:
 * ncclCommInitRank, ncclAllGather, ... keep their names). Only used when the
 * build found RCCL and defined EGG_HAVE_NCCL (Debian 12 packages none). */
#pragma once
#if __has_include(<rccl/rccl.h>)
#include <rccl/rccl.h>
#else
#include <rccl.h>
#endif
