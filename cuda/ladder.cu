/*
 * The classic reduction ladder, kernels 1..7, after Mark Harris's study
 * "Optimizing Parallel Reduction in CUDA" (rewritten here, with its known
 * bugs fixed: 64-bit indices and sums, bounds-checked loads, warp-synchronous
 * steps ordered by __syncwarp or done with shuffles).
 *
 * Every kernel is a template over an Op: the reduced type T, its identity,
 * how item i of channel c is loaded as a T, and the combine. The same kernels
 * therefore sum ints for the benchmark, fold 64-bit partial sums, and compute
 * the fused statistics partials (imgstat_partial) from samples or from the
 * partials of an earlier pass. gridDim.y is the channel; each block writes one
 * T. The combine order is fixed, so results are identical run to run. Float
 * planes are not reduced here: they follow the canonical order
 * (src/core/float_order.h) of fast.cu, whatever the kernel asked for.
 */
#include "cuda_check.cuh"
#include "reduce.cuh"
#include "warp.cuh"

#include <type_traits>

namespace {

/* ---- ops --------------------------------------------------------------- */

/* Sums of ints (the benchmark) or of 64-bit partial sums (the fold). */
template <typename In> struct SumOp {
  using T = long long;
  const In *in;
  uint64_t stride;
  __device__ T identity() const { return 0; }
  __device__ T load(uint64_t i, uint32_t c) const { return in[c * stride + i]; }
  __device__ static void combine(T &a, const T &b) { a += b; }
  __device__ void begin(uint32_t) {}
  __device__ void finish(T &) const {}
};
using SumI32Op = SumOp<int>;
using SumI64Op = SumOp<long long>;

/* Integer samples (f32 planes take the canonical order of fast.cu). */
template <typename Sample> struct StatsOp {
  using T = imgstat_partial;
  const Sample *in;
  uint64_t stride;
  uint64_t first;
  __device__ void begin(uint32_t) {}
  __device__ void finish(T &) const {}
  __device__ T identity() const { return ist_partial_empty(); }
  /* The partial of one sample. */
  __device__ T load(uint64_t i, uint32_t c) const {
    T p = ist_partial_empty();
    Sample x = in[c * stride + i];
    uint64_t v = (uint64_t)x;
    p.sum = v;
    p.sumsq = v * v;
    p.count = 1;
    p.min = p.max = (double)x;
    p.min_index = p.max_index = first + i;
    return p;
  }
  __device__ static void combine(T &a, const T &b) {
    ist_partial_combine<false>(&a, &b);
  }
};

struct PartialOp {
  using T = imgstat_partial;
  const imgstat_partial *in;
  uint64_t stride;
  __device__ void begin(uint32_t) {}
  __device__ void finish(T &) const {}
  __device__ T identity() const { return ist_partial_empty(); }
  __device__ T load(uint64_t i, uint32_t c) const { return in[c * stride + i]; }
  __device__ static void combine(T &a, const T &b) {
    ist_partial_combine<false>(&a, &b);
  }
};

/* Shared memory for a block of T, aligned for any T used here. */
template <typename T> __device__ T *ladder_shared() {
  extern __shared__ __align__(16) unsigned char ladder_smem[];
  return reinterpret_cast<T *>(ladder_smem);
}

/* Thread 0 writes the block's result, finished by the op. */
template <typename Op>
__device__ void store_result(const Op &op, const ist_pass &p,
                             typename Op::T v) {
  op.finish(v);
  typename Op::T *out = static_cast<typename Op::T *>(p.out);
  out[blockIdx.y * p.out_stride + blockIdx.x] = v;
}

/* The load of kernels 1..3: one item per thread, bounds-checked. */
template <typename Op>
__device__ __forceinline__ typename Op::T load_one(const Op &op,
                                                   const ist_pass &p) {
  uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
  return i < p.n ? op.load(i, blockIdx.y) : op.identity();
}

/* The load of kernels 4..6: two items, blockDim apart, each bounds-checked
 * (the classic version reads past n when n is not a multiple of 2*block). */
template <typename Op>
__device__ typename Op::T load_two(const Op &op, const ist_pass &p,
                                   unsigned block) {
  using T = typename Op::T;
  uint64_t i = (uint64_t)blockIdx.x * (2 * block) + threadIdx.x;
  T v = i < p.n ? op.load(i, blockIdx.y) : op.identity();
  if (i + block < p.n) {
    T w = op.load(i + block, blockIdx.y);
    Op::combine(v, w);
  }
  return v;
}

/* The frame kernels 1..6 share: the op's start for this channel, each
 * thread's load into shared memory (Two: two items, block apart, as
 * load_two; else one, as load_one), a barrier, the kernel's own tree
 * tree(sdata, tid), which leaves the block's value in sdata[0], and thread
 * 0's store. The kernels differ only in their tree (and kernel 4 on in the
 * load). */
template <bool Two, typename Op, typename Tree>
__device__ __forceinline__ void ladder_frame(Op &op, const ist_pass &p,
                                             unsigned block, Tree tree) {
  using T = typename Op::T;
  op.begin(blockIdx.y);
  T *sdata = ladder_shared<T>();
  unsigned tid = threadIdx.x;
  sdata[tid] = Two ? load_two(op, p, block) : load_one(op, p);
  __syncthreads();
  tree(sdata, tid);
  if (tid == 0)
    store_result(op, p, sdata[0]);
}

/* The shared-memory tree of kernels 3..5, by sequential addressing: the
 * stride halves from blockDim/2 while it is above Stop, and thread t
 * combines t with t+s. */
template <unsigned Stop, typename Op>
__device__ __forceinline__ void halving_tree(typename Op::T *sdata,
                                             unsigned tid) {
  for (unsigned s = blockDim.x / 2; s > Stop; s >>= 1) {
    if (tid < s)
      Op::combine(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
}

/* The last 64 -> 1 steps inside warp 0, ordered by __syncwarp: every read of
 * a neighbour completes before anyone overwrites it (Volta and later no
 * longer run a warp in lock step, so the classic volatile-only version is a
 * race). */
template <typename Op>
__device__ void warp_tail(typename Op::T *sdata, unsigned tid) {
  using T = typename Op::T;
  T v = sdata[tid];
#pragma unroll
  for (unsigned s = 32; s > 0; s >>= 1) {
    T w = sdata[tid + s];
    Op::combine(v, w);
    __syncwarp();
    sdata[tid] = v;
    __syncwarp();
  }
}

/* ---- kernel 1 ------------------------------------------------------------
 * Interleaved addressing: in step s, every thread whose id is a multiple of
 * 2s adds its neighbour s away. The baseline: correct, but tid % (2s) makes
 * the warps diverge (most threads idle inside every active warp) and the
 * modulo is slow. */
template <typename Op> __global__ void ladder1_kernel(Op op, ist_pass p) {
  ladder_frame<false>(op, p, blockDim.x,
                      [](typename Op::T *sdata, unsigned tid) {
                        for (unsigned s = 1; s < blockDim.x; s *= 2) {
                          if (tid % (2 * s) == 0)
                            Op::combine(sdata[tid], sdata[tid + s]);
                          __syncthreads();
                        }
                      });
}

/* ---- kernel 2 ------------------------------------------------------------
 * Interleaved addressing with a strided index: thread t works on element
 * 2*s*t, so the active threads are contiguous and whole warps retire (no
 * divergence, no modulo). The strided accesses now hit the same
 * shared-memory banks: bank conflicts are the new cost. */
template <typename Op> __global__ void ladder2_kernel(Op op, ist_pass p) {
  ladder_frame<false>(op, p, blockDim.x,
                      [](typename Op::T *sdata, unsigned tid) {
                        for (unsigned s = 1; s < blockDim.x; s *= 2) {
                          unsigned index = 2 * s * tid;
                          if (index < blockDim.x)
                            Op::combine(sdata[index], sdata[index + s]);
                          __syncthreads();
                        }
                      });
}

/* ---- kernel 3 ------------------------------------------------------------
 * Sequential addressing: the stride halves from blockDim/2 down to 1 and
 * thread t combines t with t+s. Consecutive threads touch consecutive words:
 * no bank conflicts. Half the threads are idle from the first step on. */
template <typename Op> __global__ void ladder3_kernel(Op op, ist_pass p) {
  ladder_frame<false>(op, p, blockDim.x, halving_tree<0, Op>);
}

/* ---- kernel 4 ------------------------------------------------------------
 * First add during the global load: each thread loads two items and
 * combines them before the shared-memory tree, so half as many blocks do the
 * same work and no thread idles in the first step. */
template <typename Op> __global__ void ladder4_kernel(Op op, ist_pass p) {
  ladder_frame<true>(op, p, blockDim.x, halving_tree<0, Op>);
}

/* ---- kernel 5 ------------------------------------------------------------
 * Unrolls the last warp: once s <= 32 only warp 0 works, so it needs no
 * __syncthreads and no loop test; the steps run unrolled with __syncwarp.
 * Saves the block-wide barriers of the last six steps. */
template <typename Op> __global__ void ladder5_kernel(Op op, ist_pass p) {
  ladder_frame<true>(op, p, blockDim.x,
                     [](typename Op::T *sdata, unsigned tid) {
                       halving_tree<32, Op>(sdata, tid);
                       if (tid < 32)
                         warp_tail<Op>(sdata, tid);
                     });
}

/* One step of kernel 6's unrolled tree: threads below Half combine with
 * their neighbour Half away, then the block's barrier; decided at compile
 * time, it is no code at all when the block has no more than Half threads. */
template <unsigned Block, unsigned Half, typename Op>
__device__ __forceinline__ void unrolled_step(typename Op::T *sdata,
                                              unsigned tid) {
  if (Block >= 2 * Half && tid < Half)
    Op::combine(sdata[tid], sdata[tid + Half]);
  if (Block >= 2 * Half)
    __syncthreads();
}

/* ---- kernel 6 ------------------------------------------------------------
 * Completely unrolled: the block size is a template parameter, so every
 * step's "if (Block >= ...)" is decided at compile time and the loop, its
 * counter and its tests disappear. */
template <unsigned Block, typename Op>
__global__ void __launch_bounds__(Block) ladder6_kernel(Op op, ist_pass p) {
  ladder_frame<true>(op, p, Block, [](typename Op::T *sdata, unsigned tid) {
    unrolled_step<Block, 512, Op>(sdata, tid);
    unrolled_step<Block, 256, Op>(sdata, tid);
    unrolled_step<Block, 128, Op>(sdata, tid);
    unrolled_step<Block, 64, Op>(sdata, tid);
    if (tid < 32)
      warp_tail<Op>(sdata, tid);
  });
}

/* ---- kernel 7 ------------------------------------------------------------
 * Several items per thread: a grid sized to fill the device once walks the
 * input with a grid stride, so each thread combines many items in registers
 * before any shared memory is touched (fewer blocks, less tree work per item,
 * more loads in flight). The tree is done with warp shuffles and one shared
 * slot per warp. */
template <unsigned Block, typename Op>
__global__ void __launch_bounds__(Block) ladder7_kernel(Op op, ist_pass p) {
  using T = typename Op::T;
  op.begin(blockIdx.y);
  T *warp_part = ladder_shared<T>();
  unsigned tid = threadIdx.x;
  uint64_t step = (uint64_t)2 * Block * gridDim.x;
  T v = op.identity();
  for (uint64_t i = (uint64_t)blockIdx.x * (2 * Block) + tid; i < p.n;
       i += step) {
    T w = op.load(i, blockIdx.y);
    Op::combine(v, w);
    if (i + Block < p.n) {
      w = op.load(i + Block, blockIdx.y);
      Op::combine(v, w);
    }
  }
  v = ist_block_reduce<Block>(v, op.identity(), warp_part,
                              [](T &a, const T &b) { Op::combine(a, b); });
  if (tid == 0)
    store_result(op, p, v);
}

/* ---- launch ------------------------------------------------------------- */

bool block_ok(int block) {
  return block >= IMGSTAT_LADDER_BLOCK_MIN &&
         block <= IMGSTAT_LADDER_BLOCK_MAX && (block & (block - 1)) == 0;
}

/* Raises a kernel's dynamic shared-memory limit when it needs more than the
 * default 48 KB (1024 threads of 88-byte partials). */
template <typename K> cudaError_t allow_shared(K kernel, size_t bytes) {
  if (bytes <= 48 * 1024)
    return cudaSuccess;
  return cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

template <typename Op, typename K>
cudaError_t launch(K kernel, unsigned block, size_t smem, const Op &op,
                   const ist_pass &p, cudaStream_t s) {
  cudaError_t e = allow_shared(kernel, smem);
  if (e == cudaSuccess)
    e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  dim3 grid(p.grid, p.channels);
  kernel<<<grid, block, smem, s>>>(op, p);
  return cudaGetLastError();
}

template <unsigned Block, typename Op>
cudaError_t run_fixed(int kernel, const Op &op, const ist_pass &p,
                      cudaStream_t s) {
  using T = typename Op::T;
  if (kernel == 6)
    return launch(ladder6_kernel<Block, Op>, Block, Block * sizeof(T), op, p,
                  s);
  return launch(ladder7_kernel<Block, Op>, Block, (Block / 32) * sizeof(T), op,
                p, s);
}

template <typename Op>
cudaError_t run(int kernel, int block, const Op &op, const ist_pass &p,
                cudaStream_t s) {
  using T = typename Op::T;
  if (!block_ok(block) || p.grid == 0 || p.channels == 0 || p.channels > 65535)
    return cudaErrorInvalidValue;
  size_t smem = (size_t)block * sizeof(T);
  switch (kernel) {
  case 1:
    return launch(ladder1_kernel<Op>, block, smem, op, p, s);
  case 2:
    return launch(ladder2_kernel<Op>, block, smem, op, p, s);
  case 3:
    return launch(ladder3_kernel<Op>, block, smem, op, p, s);
  case 4:
    return launch(ladder4_kernel<Op>, block, smem, op, p, s);
  case 5:
    return launch(ladder5_kernel<Op>, block, smem, op, p, s);
  case 6:
  case 7:
    switch (block) {
    case 64:
      return run_fixed<64>(kernel, op, p, s);
    case 128:
      return run_fixed<128>(kernel, op, p, s);
    case 256:
      return run_fixed<256>(kernel, op, p, s);
    case 512:
      return run_fixed<512>(kernel, op, p, s);
    default:
      return run_fixed<1024>(kernel, op, p, s);
    }
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t run_partials(int kernel, int block, const ist_pass *p,
                         cudaStream_t s) {
  PartialOp op{static_cast<const imgstat_partial *>(p->in), p->in_stride};
  return run(kernel, block, op, *p, s);
}

template <typename Sample>
cudaError_t run_samples(int kernel, int block, const ist_pass *p,
                        cudaStream_t s) {
  StatsOp<Sample> op{static_cast<const Sample *>(p->in), p->in_stride,
                     p->first_index};
  return run(kernel, block, op, *p, s);
}

} // namespace

unsigned ist_ladder_grid(int kernel, int block, uint64_t n, int sm_count) {
  if (block <= 0)
    return 0;
  uint64_t per_block = kernel <= 3 ? (uint64_t)block : 2 * (uint64_t)block;
  uint64_t grid = (n + per_block - 1) / per_block;
  if (kernel == 7) {
    /* One resident wave: 2048 threads per multiprocessor. */
    uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * (2048 / block);
    if (grid > wave)
      grid = wave;
  }
  if (grid < 1)
    grid = 1;
  if (grid > 0x7fffffffu)
    grid = 0; /* too large for one launch: the caller reports it */
  return (unsigned)grid;
}

cudaError_t ist_ladder_sum_i32(int kernel, int block, const ist_pass *p,
                               cudaStream_t s) {
  SumI32Op op{static_cast<const int *>(p->in), p->in_stride};
  return run(kernel, block, op, *p, s);
}

cudaError_t ist_ladder_sum_i64(int kernel, int block, const ist_pass *p,
                               cudaStream_t s) {
  SumI64Op op{static_cast<const long long *>(p->in), p->in_stride};
  return run(kernel, block, op, *p, s);
}

cudaError_t ist_ladder_stats(int kernel, int block, imgstat_sample sample,
                             int partials, const ist_pass *p, cudaStream_t s) {
  switch (sample) {
  case IMGSTAT_U8:
    return partials ? run_partials(kernel, block, p, s)
                    : run_samples<uint8_t>(kernel, block, p, s);
  case IMGSTAT_U16:
    return partials ? run_partials(kernel, block, p, s)
                    : run_samples<uint16_t>(kernel, block, p, s);
  case IMGSTAT_F32: /* the canonical order: fast.cu (the driver sends it) */
    break;
  }
  return cudaErrorInvalidValue;
}
