/*
 * Warp and block primitives of the kernels (fast.cu, ladder.cu,
 * histogram.cu, normalize.cu): shuffles of any whole-word type, warp and
 * block reductions in a fixed order, warp-aggregated keys, grid-stride
 * indices and vector stores. Device code only; nothing here allocates.
 */
#ifndef IMGSTAT_WARP_CUH
#define IMGSTAT_WARP_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#define IST_FULL_WARP 0xffffffffu

/* v of the lane `offset` above this one, moved as 32-bit words (any type
 * whose size is a whole number of words: partials, 64-bit sums). */
template <typename T>
__device__ __forceinline__ T ist_shfl_down(const T &v, int offset) {
  static_assert(sizeof(T) % 4 == 0, "shuffled types are whole words");
  union Words {
    T t;
    unsigned w[sizeof(T) / 4];
  } src, dst;
  src.t = v;
#pragma unroll
  for (int k = 0; k < (int)(sizeof(T) / 4); ++k)
    dst.w[k] = __shfl_down_sync(IST_FULL_WARP, src.w[k], offset);
  return dst.t;
}

/* Lane l takes in lane l + off for off = 16, 8, ..., 1, so lane 0 ends with
 * the combine of lanes 0..31 in a fixed order. combine(a, b) merges b into
 * a. Every lane of the warp must call it. */
template <typename T, typename Combine>
__device__ __forceinline__ T ist_warp_reduce(T v, Combine combine) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    T w = ist_shfl_down(v, off);
    combine(v, w);
  }
  return v;
}

/* The combine of the whole block's values, in a fixed order, returned to
 * thread 0 (other threads get partial results): each warp reduces, lane 0
 * of warp w leaves its result in warp_part[w] (shared memory of Block / 32
 * slots), and warp 0 reduces those. Block: the threads of the block, a
 * multiple of 32. Holds a __syncthreads: every thread must call it. */
template <int Block, typename T, typename Combine>
__device__ __forceinline__ T ist_block_reduce(T v, const T &identity,
                                              T *warp_part, Combine combine) {
  v = ist_warp_reduce(v, combine);
  const unsigned tid = threadIdx.x;
  if ((tid & 31) == 0)
    warp_part[tid / 32] = v;
  __syncthreads();
  if (tid < 32) {
    v = tid < Block / 32 ? warp_part[tid] : identity;
    v = ist_warp_reduce(v, combine);
  }
  return v;
}

/* Lanes holding equal keys form a group: the group's size in its lowest
 * lane (the one to do the group's atomic), 0 in the others. Every lane of
 * the warp must call it. */
__device__ __forceinline__ unsigned ist_warp_group_count(int key) {
  unsigned peers = __match_any_sync(IST_FULL_WARP, key);
  return (threadIdx.x & 31) == (unsigned)(__ffs(peers) - 1) ? __popc(peers)
                                                            : 0u;
}

/* This thread's index in the grid (x), and the grid's thread count: the
 * start and the step of a grid-stride loop. */
__device__ __forceinline__ uint64_t ist_grid_thread() {
  return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ uint64_t ist_grid_threads() {
  return (uint64_t)gridDim.x * blockDim.x;
}

/* Stores BYTES bytes (4, 8, 16, 32 or 64) from registers with the widest
 * aligned vector stores. */
template <int BYTES>
__device__ __forceinline__ void ist_store_vec(void *dst, const void *src) {
  if constexpr (BYTES >= 16) {
#pragma unroll
    for (int k = 0; k < BYTES / 16; ++k)
      reinterpret_cast<uint4 *>(dst)[k] =
          reinterpret_cast<const uint4 *>(src)[k];
  } else if constexpr (BYTES == 8) {
    *reinterpret_cast<uint2 *>(dst) = *reinterpret_cast<const uint2 *>(src);
  } else {
    *reinterpret_cast<unsigned int *>(dst) =
        *reinterpret_cast<const unsigned int *>(src);
  }
}

#endif /* IMGSTAT_WARP_CUH */
