/*
 * The device side of the canonical float order (src/core/float_order.h,
 * docs/float-order.md): building blocks for every kernel that reduces float
 * planes (the fused kernel of fast.cu, and batched kernels of many images),
 * so that each computes exactly the CPU's bits. Device code only.
 *
 * How a kernel reduces float planes with them:
 *  0. K = ist_fo_plane_shift(plane, ...) (the median of 16 probes; on the
 *     device by a warp, ist_fo_warp_plane_shift, before the plane's pass).
 *  1. ist_fo_chunk, by one block of IST_FO_LANES (256) threads per chunk at
 *     a time: thread t is lane t, relative to K; it reads the chunk's
 *     4-sample vectors t, t + 256, ... in increasing order (ist_fo_load_vec)
 *     and feeds each, one group, to an ist_fo_thread (NaN/Inf counted,
 *     finite samples into the lane); the plane's last, partial vector
 *     (n % 4 samples)
 *     belongs to lane (n / 4) % 256 of its chunk, after its whole vectors;
 *     then the lane tree gives thread 0 the chunk's (count, mean - K, M2).
 *  2. The chunk results of a plane, in chunk order, are folded by
 *     ist_fo_fold_block (aligned subtrees of 2^k, any number of passes)
 *     down to the plane's, and ist_fo_add_shift adds K back. Extremes and
 *     NaN/Inf counts may ride on any chunk's partial: their merge does not
 *     depend on the order.
 */
#ifndef IMGSTAT_FLOAT_ORDER_CUH
#define IMGSTAT_FLOAT_ORDER_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "float_order.h"
#include "warp.cuh"

/* Vector v (samples 4v .. 4v + 3) of a float plane: one 16-byte load when
 * the plane is 16-byte aligned, else four 4-byte loads (the same samples).
 * Stride: the samples' distance in floats (1: a dense plane; C: channel c
 * of an interleaved image of C channels, from its first sample; loaded
 * one by one). */
template <bool Aligned, int Stride = 1>
__device__ __forceinline__ uint4 ist_fo_load_vec(const float *plane,
                                                 uint64_t v) {
  if constexpr (Stride != 1) {
    const float *p = plane + 4 * v * Stride;
    return make_uint4(__float_as_uint(__ldg(p)),
                      __float_as_uint(__ldg(p + Stride)),
                      __float_as_uint(__ldg(p + 2 * Stride)),
                      __float_as_uint(__ldg(p + 3 * Stride)));
  } else if constexpr (Aligned) {
    return __ldg(reinterpret_cast<const uint4 *>(plane) + v);
  } else {
    const float *p = plane + 4 * v;
    return make_uint4(__float_as_uint(__ldg(p)), __float_as_uint(__ldg(p + 1)),
                      __float_as_uint(__ldg(p + 2)),
                      __float_as_uint(__ldg(p + 3)));
  }
}

/* (double)x for a normal float or a zero (not a denormal, NaN or Inf), by
 * integer operations: the exponent rebiased (+896), the mantissa's 23 bits
 * moved to the top of the double's 52; exact, as the conversion is. */
__device__ __forceinline__ double ist_fo_widen_normal(float x) {
  const unsigned u = __float_as_uint(x), sign = u & 0x80000000u;
  const unsigned mag = u & 0x7fffffffu;
  const unsigned hi = mag ? ((mag >> 3) + 0x38000000u) | sign : sign;
  return __hiloint2double((int)hi, (int)(u << 29));
}

/* Whether x is a normal float or a zero (ist_fo_widen_normal takes it). */
__device__ __forceinline__ bool ist_fo_normal_or_zero(float x) {
  const unsigned mag = __float_as_uint(x) & 0x7fffffffu;
  return mag - 0x00800000u < 0x7f000000u || mag == 0;
}

/* One thread's share of the order: its lane of the current chunk and the
 * NaN / Inf counts of everything it saw. */
struct ist_fo_thread {
  ist_fo_acc lane = {0, 0.0, 0.0, 0.0, 0.0};
  uint64_t nan_count = 0, inf_count = 0;

  /* One group of the lane: x[j] for the bits j of `present`; NaN / Inf
   * counted, the finite samples into the lane (ist_fo_group_add). Returns
   * the bits of the finite ones. */
  __device__ __forceinline__ unsigned add_group(const float (&x)[4],
                                                unsigned present) {
    double d[4];
    unsigned finite = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      d[j] = 0.0;
      if (!((present >> j) & 1u))
        continue;
      if (x[j] != x[j]) {
        nan_count += 1;
      } else if (fabsf(x[j]) == __int_as_float(0x7f800000)) {
        inf_count += 1;
      } else {
        d[j] = __dsub_rn((double)x[j], lane.shift);
        finite |= 1u << j;
      }
    }
    if (finite)
      ist_fo_group_sums(&lane, d, (uint32_t)__popc(finite));
    return finite;
  }
  /* x[0..M), M a multiple of 4, all finite (the caller checked): M / 4
   * whole groups, the same as add_group of each without a branch. */
  template <int M>
  __device__ __forceinline__ void add_finite(const float (&x)[M]) {
    static_assert(M % 4 == 0, "whole groups");
#pragma unroll
    for (int g = 0; g < M; g += 4) {
      const double d[4] = {__dsub_rn((double)x[g], lane.shift),
                           __dsub_rn((double)x[g + 1], lane.shift),
                           __dsub_rn((double)x[g + 2], lane.shift),
                           __dsub_rn((double)x[g + 3], lane.shift)};
      ist_fo_group_sums(&lane, d, 4);
    }
  }
  /* add_finite of normal floats and zeros only (the caller checked: no
   * denormal, NaN or Inf), each widened by integer operations rather than
   * a conversion (one a sample on a pipe of a quarter of the double rate):
   * the same doubles, exactly, so the same sums. */
  template <int M>
  __device__ __forceinline__ void add_normal(const float (&x)[M]) {
    static_assert(M % 4 == 0, "whole groups");
#pragma unroll
    for (int g = 0; g < M; g += 4) {
      const double d[4] = {
          __dsub_rn(ist_fo_widen_normal(x[g]), lane.shift),
          __dsub_rn(ist_fo_widen_normal(x[g + 1]), lane.shift),
          __dsub_rn(ist_fo_widen_normal(x[g + 2]), lane.shift),
          __dsub_rn(ist_fo_widen_normal(x[g + 3]), lane.shift)};
      ist_fo_group_sums(&lane, d, 4);
    }
  }
  /* The plane's shift K, once: every lane's sums are relative to it. */
  __device__ __forceinline__ void set_shift(double k) { lane.shift = k; }
  /* A fresh lane (the shift kept). */
  __device__ __forceinline__ void start_chunk() {
    lane.count = 0;
    lane.s1 = lane.s2 = lane.e = 0.0;
  }
};

struct ist_fo_merge_moments {
  __device__ void operator()(ist_fo_moments &a, const ist_fo_moments &b) const {
    ist_fo_merge(&a, &b);
  }
};

template <bool IsFloat> struct ist_fo_merge_partials {
  __device__ void operator()(imgstat_partial &a,
                             const imgstat_partial &b) const {
    ist_partial_merge(&a, &b, IsFloat);
  }
};

/* The tree of float_order.h over the Block values of a block (thread i's
 * value is slot i; Block a power of two, at least 32): within each warp
 * lane l takes in lane l + s for s = 1, 2, ..., 16 (neighbours first), then
 * warp 0 does the same over the warps' results. Thread 0 gets the root.
 * Every thread must call it; it begins and ends with the block in step, so
 * smem (Block / 32 slots) may be reused at once. */
template <int Block, typename T, typename Combine>
__device__ __forceinline__ T ist_fo_block_tree(T v, const T &identity, T *smem,
                                               Combine combine) {
  static_assert(Block >= 32 && (Block & (Block - 1)) == 0,
                "a power of two of whole warps");
#pragma unroll
  for (int s = 1; s < 32; s *= 2) {
    T w = ist_shfl_down(v, s);
    combine(v, w); /* lanes not a multiple of 2s compute unused values */
  }
  const unsigned tid = threadIdx.x;
  if ((tid & 31) == 0)
    smem[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = tid < Block / 32 ? smem[tid] : identity;
#pragma unroll
    for (int s = 1; s < Block / 32; s *= 2) {
      T w = ist_shfl_down(v, s);
      combine(v, w);
    }
  }
  __syncthreads();
  return v;
}

/* The lane tree of a chunk (Block == IST_FO_LANES). */
template <int Block>
__device__ __forceinline__ ist_fo_moments
ist_fo_block_tree_moments(ist_fo_moments m, ist_fo_moments *smem) {
  static_assert(Block == (int)IST_FO_LANES, "one thread per lane");
  const ist_fo_moments none = {0, 0.0, 0.0};
  return ist_fo_block_tree<Block>(m, none, smem, ist_fo_merge_moments());
}

/* Step 0 of float_order.h, K, by a warp (all 32 lanes call it, all get
 * it): lane j < 16 loads probe j of the dense plane of n samples and ranks
 * it among the 16 (ist_fo_probe_rank, as the host does); the lane whose
 * probe has the median's rank gives it to the others. The f32 kernels get
 * K from a kernel of its own (fast.cu's f32_shift_kernel): picked inside
 * them it cost their loop registers and time. */
__device__ __forceinline__ double
ist_fo_warp_plane_shift(const float *plane, uint64_t n, uint64_t stride = 1) {
  const unsigned t = threadIdx.x & 31;
  const uint32_t np = ist_fo_probe_count(n);
  const float mine =
      t < np ? __ldg(plane + (uint64_t)t * ist_fo_probe_step(n) * stride)
             : 0.0f;
  float p[IST_FO_PROBES];
#pragma unroll
  for (int j = 0; j < (int)IST_FO_PROBES; ++j)
    p[j] = __shfl_sync(0xffffffffu, mine, j);
  const bool fin = t < np && ist_fo_finite(mine);
  const unsigned finite = __popc(__ballot_sync(0xffffffffu, fin));
  if (finite == 0)
    return 0.0;
  const unsigned hit =
      __ballot_sync(0xffffffffu, fin && ist_fo_probe_rank(p, np, mine, t) ==
                                            ist_fo_median_rank(finite));
  return (double)__shfl_sync(0xffffffffu, mine, __ffs((int)hit) - 1);
}

/* One tile of a chunk's loads: vectors tile * Block * Items + k * Block + t
 * (k < Items) of thread t; the valid ones (index < nvec) are a prefix
 * v[0..nvalid), the others are zero and not read. */
template <int Items> struct ist_fo_tile {
  uint4 v[Items];
  int nvalid;
};

template <int Block, int Items, bool Aligned, int Stride = 1>
__device__ __forceinline__ void ist_fo_load_tile(const float *plane,
                                                 uint64_t nvec, uint64_t tile,
                                                 ist_fo_tile<Items> &out) {
  const unsigned t = threadIdx.x;
  out.nvalid = 0;
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    uint64_t i = tile * ((uint64_t)Block * Items) + (uint64_t)j * Block + t;
    if (i < nvec) {
      out.v[j] = ist_fo_load_vec<Aligned, Stride>(plane, i);
      out.nvalid = j + 1;
    } else {
      out.v[j] = make_uint4(0, 0, 0, 0);
    }
  }
}

/* The tiles of a chunk. */
template <int Block, int Items> constexpr int ist_fo_chunk_tiles() {
  static_assert((IST_FO_CHUNK / 4) % ((uint64_t)Block * Items) == 0,
                "whole tiles a chunk");
  return (int)((IST_FO_CHUNK / 4) / ((uint64_t)Block * Items));
}

/* The first tile of chunk c of a plane of n samples (none past the plane),
 * for ist_fo_chunk's `head` when Prefetch > 0. */
template <int Block, int Items, bool Aligned, int Stride = 1>
__device__ __forceinline__ void ist_fo_load_chunk_head(const float *plane,
                                                       uint64_t n, uint64_t c,
                                                       ist_fo_tile<Items> &h) {
  ist_fo_load_tile<Block, Items, Aligned, Stride>(
      plane, n / 4, c * (uint64_t)ist_fo_chunk_tiles<Block, Items>(), h);
}

/*
 * One chunk of a float plane in the canonical order, by a block of
 * Block == 256 threads (thread t is lane t): chunk c of the plane of n
 * samples, its 4-sample vectors read Items at a time (tile jt of the chunk:
 * vectors (c * tiles + jt) * 256 * Items + k * 256 + t, k < Items), then the
 * plane's last partial vector when it falls to this lane, then the lane
 * tree, every lane's sums relative to the plane's K (acc.fo.set_shift,
 * once). Returns the chunk's (count, mean - K, M2) in thread 0 (the others:
 * unused values); the lanes start afresh at the next call. Every thread of the
 * block must call it (it holds __syncthreads).
 *
 * When the loads are issued does not change what each lane computes (the
 * same vectors in the same order), only how many are in flight:
 *   Prefetch 0: each tile is loaded, then reduced (`head`, next_c unused);
 *   Prefetch 1: `head` holds chunk c's first tile on entry
 *     (ist_fo_load_chunk_head); before the partial vector and the lane
 *     tree, the first tile of chunk next_c (the block's next; none past the
 *     plane) is loaded into it, so the tree's barriers wait with loads in
 *     flight;
 *   Prefetch 2: as 1, and every tile is loaded while the one before it is
 *     reduced.
 *
 * Acc: the kernel's per-thread accumulator, with
 *   ist_fo_thread fo;                           the lane and NaN/Inf counts
 *   void add_tile(const uint4 (&v)[Items], int nvalid, uint64_t tile);
 *       the valid vectors v[0..nvalid) of tile `tile` (global tile index:
 *       vector index = tile * 256 * Items + k * 256 + threadIdx.x), each
 *       passed to fo.add_group (or fo.add_finite) in order (and to its own
 *       extremes);
 *   void add_partial(const float (&x)[4], int m, uint64_t index);
 *       the plane's last m < 4 samples (raster index `index` on), one
 *       group: fo.add_group(x, (1 << m) - 1) first.
 * fast.cu's AccF32 is one; a batched kernel calls this per (image, chunk).
 */
template <int Block, int Items, int Prefetch, bool Aligned, int Stride = 1,
          typename Acc>
__device__ __forceinline__ ist_fo_moments
ist_fo_chunk(const float *plane, uint64_t n, uint64_t c, uint64_t next_c,
             Acc &acc, ist_fo_moments *smem, ist_fo_tile<Items> &head) {
  static_assert(Block == (int)IST_FO_LANES, "one thread per lane");
  static_assert(Prefetch >= 0 && Prefetch <= 2, "Prefetch 0, 1 or 2");
  constexpr int kTiles = ist_fo_chunk_tiles<Block, Items>();
  const unsigned t = threadIdx.x;
  const uint64_t nvec = n / 4;
  const uint64_t tile0 = c * kTiles;
  acc.fo.start_chunk();
  if constexpr (Prefetch < 2) {
    int jt = 0;
    if constexpr (Prefetch == 1) {
      if (head.nvalid > 0)
        acc.add_tile(head.v, head.nvalid, tile0);
      jt = head.nvalid > 0 ? 1 : kTiles;
    }
    for (; jt < kTiles; ++jt) {
      ist_fo_tile<Items> cur;
      ist_fo_load_tile<Block, Items, Aligned, Stride>(plane, nvec, tile0 + jt,
                                                      cur);
      if (cur.nvalid == 0)
        break; /* past the plane's whole vectors */
      acc.add_tile(cur.v, cur.nvalid, tile0 + jt);
    }
    if constexpr (Prefetch == 1)
      ist_fo_load_chunk_head<Block, Items, Aligned, Stride>(plane, n, next_c,
                                                            head);
  } else {
    for (int jt = 0; jt < kTiles; ++jt) {
      ist_fo_tile<Items> nx;
      /* tiles past the plane's whole vectors have nvalid 0: nothing read,
       * nothing added (as the break above) */
      ist_fo_load_tile<Block, Items, Aligned, Stride>(
          plane, nvec, jt + 1 < kTiles ? tile0 + jt + 1 : next_c * kTiles, nx);
      if (head.nvalid > 0)
        acc.add_tile(head.v, head.nvalid, tile0 + jt);
      head = nx;
    }
  }
  /* the plane's last, partial vector: lane (n / 4) % 256 of its chunk, after
   * the lane's whole vectors, a group of n % 4 samples */
  if (n % 4 != 0 && t == nvec % IST_FO_LANES &&
      (nvec * 4) / IST_FO_CHUNK == c) {
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int m = (int)(n % 4);
    for (int j = 0; j < m; ++j)
      x[j] = __ldg(plane + (nvec * 4 + j) * Stride);
    acc.add_partial(x, m, nvec * 4);
  }
  ist_fo_moments m = ist_fo_lane_finish(&acc.fo.lane);
  return ist_fo_block_tree_moments<Block>(m, smem);
}

/* The subtree over partials in[base, base + N) (N a power of two; items at
 * n and beyond are empty), in registers: log2(N) + 1 partials live. */
template <int N, bool IsFloat>
__device__ __forceinline__ imgstat_partial
ist_fo_subtree(const imgstat_partial *in, uint64_t base, uint64_t n) {
  if constexpr (N == 1) {
    return base < n ? in[base] : ist_partial_empty();
  } else {
    imgstat_partial left = ist_fo_subtree<N / 2, IsFloat>(in, base, n);
    imgstat_partial right = ist_fo_subtree<N / 2, IsFloat>(in, base + N / 2, n);
    ist_partial_merge(&left, &right, IsFloat);
    return left;
  }
}

/* Block b's share of a fold pass: the subtree over partials
 * in[b * Block * Items, (b + 1) * Block * Items) of n, thread t taking the
 * Items neighbours from (b * Block + t) * Items, then the block tree.
 * Thread 0 gets the subtree's root (an aligned subtree of the chunk tree:
 * passes of this fold make the whole tree). The batched kernels call it
 * with b = 0 for each image's partials. */
template <int Block, int Items, bool IsFloat>
__device__ __forceinline__ imgstat_partial ist_fo_fold_block_at(
    const imgstat_partial *in, uint64_t n, uint64_t b, imgstat_partial *smem) {
  uint64_t base = (b * Block + threadIdx.x) * Items;
  imgstat_partial p = ist_fo_subtree<Items, IsFloat>(in, base, n);
  return ist_fo_block_tree<Block>(p, ist_partial_empty(), smem,
                                  ist_fo_merge_partials<IsFloat>());
}

/* ist_fo_fold_block_at for this block (blockIdx.x). */
template <int Block, int Items, bool IsFloat>
__device__ __forceinline__ imgstat_partial ist_fo_fold_block(
    const imgstat_partial *in, uint64_t n, imgstat_partial *smem) {
  return ist_fo_fold_block_at<Block, Items, IsFloat>(in, n, blockIdx.x, smem);
}

#endif /* IMGSTAT_FLOAT_ORDER_CUH */
