/*
 * The default kernel ("fast"): the fused statistics of a plane at close to
 * the memory bandwidth, and the fold that reduces its per-block partials.
 *
 * Each block walks tiles of FastPolicy::kBlock x kItems 16-byte vectors with
 * a grid stride (the grid is sized to fill the device once); every thread
 * issues kItems independent 16-byte loads before using any of them. Per
 * thread, everything is kept in registers in the cheapest exact form:
 *  - u8: sums through __dp4a into 32-bit accumulators flushed to 64 bits every
 *    tile; min/max with Hopper's native 16x2 min/max on the even and odd
 *    bytes of each word (the 4x8 forms, __vminu4, are emulated: several
 *    instructions each);
 *  - u16: 32-bit sums flushed every tile, 64-bit sums of squares (exact),
 *    16x2 min/max;
 *  - f32: its own kernel, fast_f32_kernel below, in the canonical float
 *    order (src/core/float_order.h): the same loads, walked chunk by chunk
 *    so that thread t is lane t of every chunk; the CPU's bits.
 * First positions cost almost nothing in the loop: a thread remembers only
 * the vector in which its running min (max) last became strictly smaller
 * (larger), from the min of each vector of the tile. Vectors are visited in
 * increasing order, so that is the first vector holding the thread's final
 * min. The block's merge orders the threads' extremes by those vectors (a
 * vector's first sample standing for it), and one thread re-reads the
 * block's one 16-byte vector to find the exact first position (u8/u16; f32:
 * each thread its own). (Searching the tile in registers whenever the running
 * min improves was measured 15-40% slower: in the first tens of tiles some lane
 * of every warp improves, so the whole warp runs the search.) The unaligned
 * head and tail of the plane (< 16 bytes each) are handled sample by sample by
 * block 0. u8/u16: once a thread's running min and max are the type's bounds,
 * its later tiles only feed the sums (they cannot change either). Per-thread
 * partials are then merged with warp shuffles, one shared slot per warp, into
 * one imgstat_partial per block, in a fixed order; for integer samples on
 * integers alone (IMGSTAT_FAST_INT_MERGE: the count, the sums, and each
 * extreme as one 64-bit key, value then order, so that the smallest key is
 * the first extreme), and so are their folds (IMGSTAT_FOLD_INT). The folds,
 * and f32 pass 1 after its shift kernel, are programmatic dependent launches
 * (IMGSTAT_FAST_PDL, sm_90): launched while the kernel before them runs,
 * they wait for it on the device (pdl_wait), so that no launch gap is left
 * between the passes.
 */
#include <atomic>
#include <type_traits>

#include "cuda_check.cuh"
#include "float_order.cuh"
#include "reduce.cuh"
#include "warp.cuh"

namespace {

/* Tuning as data: one place says how the fast kernels are shaped. */
#ifndef IMGSTAT_FAST_ITEMS /* overridable to time variants (tests/gpu) */
#define IMGSTAT_FAST_ITEMS 4
#endif
#ifndef IMGSTAT_FAST_BLOCKS_PER_SM
#define IMGSTAT_FAST_BLOCKS_PER_SM 3
#endif
/* The one-image integer plane kernel's blocks a multiprocessor (the batch's
 * keeps IMGSTAT_FAST_BLOCKS_PER_SM). H200, 64 MP: at 4 rather than 3, RGB8
 * planes 1.024 -> 1.013 x CUB's sum, RGBA8 1.021 -> 1.007, RGB16 1.042 ->
 * 1.021, RGBA16 1.034 -> 1.021; the batch at 4 lost (RGB8 1.14 -> 1.18). */
#ifndef IMGSTAT_FAST_PLANE_BLOCKS_PER_SM
#define IMGSTAT_FAST_PLANE_BLOCKS_PER_SM 4
#endif
#ifndef IMGSTAT_F32_PREFETCH /* ist_fo_chunk's Prefetch (float_order.cuh) */
#define IMGSTAT_F32_PREFETCH 0
#endif
#ifndef IMGSTAT_F32_FINITE_TILES /* AccF32: whole finite tiles branch-free */
#define IMGSTAT_F32_FINITE_TILES 1
#endif
#ifndef IMGSTAT_FAST_PREFETCH
#define IMGSTAT_FAST_PREFETCH 0
#endif
/* The f32 kernel's own blocks a multiprocessor: over planes (sm_90, with
 * IMGSTAT_F32_LEAN below: 64 registers; the planes' kernel for unaligned
 * planes, four 4-byte loads a vector, spills 16 bytes) and over an
 * interleaved image's channels, samples C floats apart (the strided
 * kernel: 80 registers). */
#ifndef IMGSTAT_F32_BLOCKS_PER_SM
#define IMGSTAT_F32_BLOCKS_PER_SM 4
#endif
#ifndef IMGSTAT_F32_STRIDED_BLOCKS_PER_SM
#define IMGSTAT_F32_STRIDED_BLOCKS_PER_SM IMGSTAT_FAST_BLOCKS_PER_SM
#endif
/* u8 / u16 extremes: a tile's from its vectors' (units') packed lanes
 * first, each vector's own decoded only when the tile betters the thread's
 * running extreme (1: the planes' kernels and u8 by units; 2: u16 by units
 * too, 1.136 x CUB's sum for RGB16 against 1.112 at 1, H200, f5dc1c5);
 * every vector's decoded every tile (0). */
#ifndef IMGSTAT_FAST_LAZY_FIRST
#define IMGSTAT_FAST_LAZY_FIRST 1
#endif
/* u8 extremes in the high bytes of the 16-bit lanes (1): a lane's min /
 * max over words w and w << 8 has the min / max of the bytes that reach the
 * lanes' high bytes as its own high byte (the low byte only breaks ties),
 * one shift a word where the low bytes take a mask and a permute (0). */
#ifndef IMGSTAT_U8_HIGH_EXTREMES
#define IMGSTAT_U8_HIGH_EXTREMES 1
#endif
/* A timing diagnostic of the interleaved kernel by units (never a
 * default: its partials are wrong): its loads coalesced, each warp load
 * instruction 512 bytes in a row, as CUB's, rather than C vectors in a row
 * a thread. */
#ifndef IMGSTAT_HWC_COALESCED_DIAG
#define IMGSTAT_HWC_COALESCED_DIAG 0
#endif
/* The same, without the split of a unit's words into channels (wrong
 * channels): how much the byte permutes cost. */
#ifndef IMGSTAT_HWC_NOSPLIT_DIAG
#define IMGSTAT_HWC_NOSPLIT_DIAG 0
#endif
#ifndef IMGSTAT_FAST_SATURATED_SKIP
#define IMGSTAT_FAST_SATURATED_SKIP 1
#endif
/* Switches measured by tests/gpu/checks/kernel_roof.sh (docs/benchmarks.md,
 * "The fused kernels against CUB on the H200"); 0 everywhere gives the
 * kernels before them. The same partials either way. */
/* The integer planes' block merge on integers alone (count, sums and each
 * extreme as one 64-bit key) rather than imgstat_partial merges. */
#ifndef IMGSTAT_FAST_INT_MERGE
#define IMGSTAT_FAST_INT_MERGE 1
#endif
/* f32 planes: each block's first positions from one re-read vector (the
 * block's first extreme), not one re-read a thread (interleaved float32
 * keeps a re-read a thread: measured slower this way, docs/benchmarks.md). */
#ifndef IMGSTAT_F32_BLOCK_FIRST
#define IMGSTAT_F32_BLOCK_FIRST 1
#endif
/* Programmatic dependent launch (sm_90): a kernel that reads what the one
 * before it in the stream wrote (the folds; f32 pass 1 after the shift
 * kernel) is launched while that one runs and waits for it on the device,
 * so that its launch overlaps the end of the other. */
#ifndef IMGSTAT_FAST_PDL
#define IMGSTAT_FAST_PDL 1
#endif
/* The folds of integer partials on integers alone (count, sums, and each
 * extreme as one 64-bit key) rather than imgstat_partial merges. */
#ifndef IMGSTAT_FOLD_INT
#define IMGSTAT_FOLD_INT 1
#endif
/* u8 / u16 planes (with IMGSTAT_FAST_INT_MERGE): each thread keeps, in
 * registers, the vector of its first min and of its first max, so that the
 * block's first positions need no load from memory at the end. */
#ifndef IMGSTAT_FAST_KEEP_VEC
#define IMGSTAT_FAST_KEEP_VEC 0
#endif
/* f32: the whole tiles of normal floats and zeros widened to double by
 * integer operations (ist_fo_widen_normal), not conversions (1); or (2)
 * the whole tiles of normal floats alone (no zero: no select a sample),
 * told by one integer minimum over the tile that also rules out NaN and
 * Inf (no float test of finiteness), widened by f32_widen_normal_nz. */
#ifndef IMGSTAT_F32_INT_WIDEN
#define IMGSTAT_F32_INT_WIDEN 0
#endif
/* Grids of whole rounds: a pass of T tiles (chunks) over at most W blocks
 * at once gets ceil(T / ceil(T / W)) blocks, each ceil(T / W) tiles but the
 * last, rather than W blocks of which some do one tile more (the others
 * idle through that round, the memory half used). */
/* f32: less state held across the chunk loop (the registers it frees may
 * go to loads in flight or to more blocks a multiprocessor): thread 0
 * stores its block's first chunk's moments at once and adds the block's
 * extremes to them at the end, and the plane's last, partial vector (n % 4
 * samples) gives its extremes by thread 0 of its block re-reading it at
 * the end, not through every thread's scalar candidates. IMGSTAT_F32_LEAN
 * for planes (on by default, at 4 blocks a multiprocessor: H200, 1.13 x
 * CUB, not 1.18 without it at 3), IMGSTAT_F32_STRIDED_LEAN for the strided
 * kernel over interleaved images (off: at 4 blocks a multiprocessor it ran
 * at 2.70 x CUB, not 1.34; at 3 no faster than without it). */
#ifndef IMGSTAT_F32_LEAN
#define IMGSTAT_F32_LEAN 1
#endif
#ifndef IMGSTAT_F32_STRIDED_LEAN
#define IMGSTAT_F32_STRIDED_LEAN 0
#endif
/* Interleaved f32 (2 to 4 channels, the image at a 16-byte boundary): one
 * grid for all channels, thread t lane t of every channel, its 4 pixels'
 * C 16-byte vectors read whole (coalesced, every byte once: not C grids
 * reading each line C times) and split by channel in registers
 * (fast_f32_hwc_kernel); its blocks a multiprocessor and vectors a tile of
 * each channel. */
#ifndef IMGSTAT_F32_HWC_ALL
#define IMGSTAT_F32_HWC_ALL 0
#endif
#ifndef IMGSTAT_F32_HWC_BLOCKS_PER_SM
#define IMGSTAT_F32_HWC_BLOCKS_PER_SM 2
#endif
#ifndef IMGSTAT_F32_HWC_ITEMS
#define IMGSTAT_F32_HWC_ITEMS 2
#endif
#ifndef IMGSTAT_FAST_BALANCE
#define IMGSTAT_FAST_BALANCE 1
#endif
/* Batched planes: at least this many tiles a block (1: a block a tile, up to
 * the one-image kernel's grid). H200, 128 x 0.5 MP: 4 tiles 1.29 x CUB's
 * segmented sum (RGB8), 8 tiles 1.20, 16 tiles 1.13, 32 1.08, 64 1.08
 * (RGB16: 16 tiles 1.096, 32 1.063, 64 1.050; docs/benchmarks.md). A 0.5 MP
 * u8 plane is 32 tiles: one block a plane. */
#ifndef IMGSTAT_SEG_TILES
#define IMGSTAT_SEG_TILES 64
#endif
/* Batched planes of one block each (the usual case at 64 tiles a block):
 * the block's partial is the plane's, written where the fold would write
 * it, and the fold's launch is skipped (0: the fold runs anyway). */
#ifndef IMGSTAT_SEG_DIRECT
#define IMGSTAT_SEG_DIRECT 1
#endif
struct FastPolicy {
  static constexpr int kBlock = 256;                /* threads per block */
  static constexpr int kItems = IMGSTAT_FAST_ITEMS; /* 16-byte loads a tile */
  static constexpr int kBlocksPerSm = IMGSTAT_FAST_BLOCKS_PER_SM;
  static constexpr int kPlaneBlocksPerSm = IMGSTAT_FAST_PLANE_BLOCKS_PER_SM;
  /* Load the next tile before working on this one (twice the registers). */
  static constexpr bool kPrefetch = IMGSTAT_FAST_PREFETCH;
  /* u8/u16: once a thread's running min and max are the type's bounds, no
   * later tile can change them, so its tiles only feed the sums. */
  static constexpr bool kSaturatedSkip = IMGSTAT_FAST_SATURATED_SKIP;
  static constexpr int kTile = kBlock * kItems; /* vectors per tile */
};

/* The int sum of the benchmark (no first positions: more loads a tile). */
struct SumPolicy {
  static constexpr int kBlock = FastPolicy::kBlock;
  static constexpr int kItems = 4;
  static constexpr int kTile = kBlock * kItems;
};

struct FoldPolicy {
  static constexpr int kBlock = 256;
  static constexpr int kItems = 8; /* partials per thread */
};

constexpr uint64_t kNone = UINT64_MAX;

/* The f32 kernel's shape by layout: planes (Stride 1) and an interleaved
 * image's channels read C floats apart (Stride C, 2 to 4) are tuned apart
 * (the same partials either way). */
template <int Stride> struct F32Shape {
  static constexpr bool kLean =
      Stride == 1 ? IMGSTAT_F32_LEAN : IMGSTAT_F32_STRIDED_LEAN;
  static constexpr int kBlocksPerSm = Stride == 1
                                          ? IMGSTAT_F32_BLOCKS_PER_SM
                                          : IMGSTAT_F32_STRIDED_BLOCKS_PER_SM;
};

/* Programmatic dependent launch (IMGSTAT_FAST_PDL): a kernel launched as
 * dependent (launch_dependent) calls pdl_wait before it touches memory: it
 * returns once the kernels before it in the stream have finished and their
 * writes are visible. pdl_trigger lets the stream's next kernel, when
 * launched as dependent, start (to wait) before this one ends. Both are
 * no-ops when the feature is off or the kernel was launched plainly. */
__device__ __forceinline__ void pdl_wait() {
#if IMGSTAT_FAST_PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if IMGSTAT_FAST_PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* ---- block-wide merges (warp.cuh) ---------------------------------------- */

template <bool IsFloat> struct MergePartials {
  __device__ void operator()(imgstat_partial &a,
                             const imgstat_partial &b) const {
    ist_partial_combine<IsFloat>(&a, &b);
  }
};

/* Merges the block's partials in a fixed order; thread 0 returns the
 * block's. */
template <bool IsFloat, int Block>
__device__ imgstat_partial block_merge(imgstat_partial p) {
  __shared__ imgstat_partial warp_part[Block / 32];
  return ist_block_reduce<Block>(p, ist_partial_empty(), warp_part,
                                 MergePartials<IsFloat>());
}

struct AddSums {
  __device__ void operator()(long long &a, const long long &b) const { a += b; }
};

template <int Block> __device__ long long block_sum(long long v) {
  __shared__ long long warp_sum[Block / 32];
  return ist_block_reduce<Block>(v, 0LL, warp_sum, AddSums());
}

/* Per-lane min / max of two u16 lanes: one native instruction on sm_90. */
__device__ __forceinline__ unsigned min_u16x2(unsigned a, unsigned b) {
  unsigned r;
  asm("min.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ unsigned max_u16x2(unsigned a, unsigned b) {
  unsigned r;
  asm("max.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

/* ---- the plane's layout ------------------------------------------------- */

/* A plane seen as head samples (up to the first 16-byte boundary), nvec
 * aligned vectors, and tail samples. */
template <typename Sample> struct Layout {
  static constexpr int kPerVec = 16 / (int)sizeof(Sample);
  const Sample *plane;
  uint64_t head, nvec, tail;
  const uint4 *vec;

  __device__ Layout(const Sample *p, uint64_t n) : plane(p) {
    uint64_t mis = (uintptr_t)p & 15;
    head = mis ? (16 - mis) / sizeof(Sample) : 0;
    if (head > n)
      head = n;
    nvec = (n - head) / kPerVec;
    tail = n - head - nvec * kPerVec;
    vec = reinterpret_cast<const uint4 *>(p + head);
  }
  /* Plane index of sample j of vector v. */
  __device__ uint64_t index(uint64_t v, int j) const {
    return head + v * kPerVec + j;
  }
};

/* Vector k of thread t in tile `tile`. */
__device__ __forceinline__ uint64_t vec_of(uint64_t tile, int k, unsigned t) {
  return tile * FastPolicy::kTile + (uint64_t)k * FastPolicy::kBlock + t;
}

/* A running (value, first index) candidate, for samples seen one by one. */
template <typename V> struct Candidate {
  V value;
  uint64_t index;
};

/* Sample j of a 16-byte vector held as four words. */
template <typename Sample>
__device__ __forceinline__ Sample sample_of(const unsigned (&w)[4], int j) {
  constexpr int kSize = (int)sizeof(Sample);
  unsigned word = w[(j * kSize) / 4];
  if constexpr (kSize == 4) {
    return (Sample)__uint_as_float(word);
  } else {
    constexpr unsigned kMask = (1u << (8 * kSize)) - 1;
    return (Sample)((word >> (((j * kSize) % 4) * 8)) & kMask);
  }
}

template <typename Sample> struct Found {
  int j; /* position in the vector, -1: none */
  Sample value;
};

/* The first sample of a vector equal to `value` (as compared by ==, so the
 * first of its equality class, as a sequential scan keeps). Walked backwards
 * so that the last match written is the first in order, without branches. */
template <typename Sample, typename V>
__device__ Found<Sample> find_in_vector(const uint4 &v, V value) {
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  Found<Sample> f{-1, (Sample)0};
#pragma unroll
  for (int j = 16 / (int)sizeof(Sample) - 1; j >= 0; --j) {
    Sample x = sample_of<Sample>(w, j);
    if ((V)x == value) {
      f.j = j;
      f.value = x;
    }
  }
  return f;
}

/* The first of the tile's valid vectors whose extreme h[k] equals e. */
template <typename H>
__device__ __forceinline__ int first_vector(const H (&h)[FastPolicy::kItems],
                                            int nvalid, H e) {
  int first = 0;
#pragma unroll
  for (int k = FastPolicy::kItems - 1; k >= 0; --k)
    if (k < nvalid && h[k] == e)
      first = k;
  return first;
}

/* ---- per-thread accumulators ------------------------------------------- */

/* Each accumulator keeps, besides its sums, the running min / max of the
 * vectors it has seen and the index of the vector in which each last became
 * strictly better (kNone: none yet): per tile it computes the extreme of each
 * vector, so only that one 16-byte vector needs re-reading at the end. The
 * head and tail samples, seen one by one, keep (value, first index)
 * candidates. V holds the values (int for u8/u16, float for f32); the
 * "none" values are below / above every sample. */
template <typename V> struct Extremes {
  V vmin, vmax; /* running min / max of the vectors */
  uint64_t min_vec = kNone, max_vec = kNone;
  Candidate<V> smin, smax;

  __device__ Extremes(V none_min, V none_max)
      : vmin(none_min),
        vmax(none_max), smin{none_min, kNone}, smax{none_max, kNone} {}
  /* After a tile: hmin[k] / hmax[k] the extremes of its valid vectors
   * k < nvalid, tmin / tmax theirs. */
  template <typename H>
  __device__ __forceinline__ void note_tile(const H (&hmin)[FastPolicy::kItems],
                                            const H (&hmax)[FastPolicy::kItems],
                                            int nvalid, uint64_t tile, H tmin,
                                            H tmax) {
    if ((V)tmin < vmin) {
      vmin = (V)tmin;
      min_vec = vec_of(tile, first_vector(hmin, nvalid, tmin), threadIdx.x);
    }
    if ((V)tmax > vmax) {
      vmax = (V)tmax;
      max_vec = vec_of(tile, first_vector(hmax, nvalid, tmax), threadIdx.x);
    }
  }
  /* Samples come in increasing index order: strictly better only. */
  __device__ __forceinline__ void note_sample(V x, uint64_t index) {
    if (x < smin.value) {
      smin.value = x;
      smin.index = index;
    }
    if (x > smax.value) {
      smax.value = x;
      smax.index = index;
    }
  }
};

/* u8 / u16: exact integer sums, and each vector's extremes from two
 * 16-bit lanes (min.u16x2 / max.u16x2 words). */
struct IntAcc : Extremes<int> {
  uint64_t count = 0, sum = 0, sumsq = 0;
  __device__ explicit IntAcc(int none_min) : Extremes<int>(none_min, -1) {}

  __device__ __forceinline__ void add_sums(uint64_t samples, uint64_t s,
                                           uint64_t q) {
    count += samples;
    sum += s;
    sumsq += q;
  }
  /* Ends a tile: its sums over `samples` samples, and the extremes of its
   * valid vectors k < nvalid packed in the lanes of mn[k] / mx[k]
   * (Word::lane_min / lane_max read them). */
  template <typename Word>
  __device__ __forceinline__ void
  end_tile(const unsigned (&mn)[FastPolicy::kItems],
           const unsigned (&mx)[FastPolicy::kItems], int nvalid, uint64_t tile,
           uint64_t samples, uint64_t s, uint64_t q) {
    unsigned hmin[FastPolicy::kItems], hmax[FastPolicy::kItems];
    if constexpr (IMGSTAT_FAST_LAZY_FIRST) {
      /* the tile's extremes from its lanes; a vector's own only when the
       * tile betters the running one (vectors k >= nvalid hold the lanes'
       * initial values, which no valid vector's extreme is beyond) */
      unsigned lmn = mn[0], lmx = mx[0];
#pragma unroll
      for (int k = 1; k < FastPolicy::kItems; ++k) {
        lmn = min_u16x2(lmn, mn[k]);
        lmx = max_u16x2(lmx, mx[k]);
      }
      const unsigned tmin = Word::lane_min(lmn);
      const unsigned tmax = Word::lane_max(lmx);
      add_sums(samples, s, q);
      if ((int)tmin < vmin) {
#pragma unroll
        for (int k = 0; k < FastPolicy::kItems; ++k)
          hmin[k] = Word::lane_min(mn[k]);
        vmin = (int)tmin;
        min_vec = vec_of(tile, first_vector(hmin, nvalid, tmin), threadIdx.x);
      }
      if ((int)tmax > vmax) {
#pragma unroll
        for (int k = 0; k < FastPolicy::kItems; ++k)
          hmax[k] = Word::lane_max(mx[k]);
        vmax = (int)tmax;
        max_vec = vec_of(tile, first_vector(hmax, nvalid, tmax), threadIdx.x);
      }
      return;
    }
    unsigned tmin = 0xffffu, tmax = 0;
#pragma unroll
    for (int k = 0; k < FastPolicy::kItems; ++k) {
      hmin[k] = Word::lane_min(mn[k]);
      hmax[k] = Word::lane_max(mx[k]);
      tmin = min(tmin, hmin[k]);
      tmax = max(tmax, hmax[k]);
    }
    add_sums(samples, s, q);
    note_tile(hmin, hmax, nvalid, tile, tmin, tmax);
  }
  __device__ __forceinline__ void add_one(unsigned x, uint64_t index) {
    add_sums(1, x, (uint64_t)x * x);
    note_sample((int)x, index);
  }
};

/* The extreme of a vector's (unit's) packed 16x2 lanes of mins (maxes),
 * each lane's value shifted up by kShift bits. */
template <int kShift> struct PackedLanes {
  static __device__ __forceinline__ unsigned lane_min(unsigned mn) {
    return min(mn & 0xffffu, mn >> 16) >> kShift;
  }
  static __device__ __forceinline__ unsigned lane_max(unsigned mx) {
    return max(mx & 0xffffu, mx >> 16) >> kShift;
  }
};

/* How a 32-bit word of samples adds to a thread's sums (s, q) and to the
 * packed 16x2 extremes of its vector (mn, mx): u8, four samples a word, sums
 * through __dp4a, extremes on the even and odd bytes (or in the lanes' high
 * bytes). */
struct WordU8 : PackedLanes<IMGSTAT_U8_HIGH_EXTREMES ? 8 : 0> {
  using Sample = uint8_t;
  using SumSq = unsigned; /* a tile's: <= 16 * 8 * 65025, no overflow */
  static constexpr int kMax = 255;
  static constexpr uint64_t kPerVector = 16; /* samples a 16-byte vector */

  static __device__ __forceinline__ void sums(unsigned w, unsigned &s,
                                              unsigned &q) {
    s = __dp4a(w, 0x01010101u, s);
    q = __dp4a(w, w, q);
  }
  static __device__ __forceinline__ void extremes(unsigned w, unsigned &mn,
                                                  unsigned &mx) {
    if constexpr (IMGSTAT_U8_HIGH_EXTREMES) {
      const unsigned up = w << 8; /* bytes 0, 2 in the lanes' high bytes */
      mn = min_u16x2(mn, w);
      mn = min_u16x2(mn, up);
      mx = max_u16x2(mx, w);
      mx = max_u16x2(mx, up);
      return;
    }
    unsigned even = w & 0x00ff00ffu;          /* bytes 0, 2 */
    unsigned odd = __byte_perm(w, 0, 0x4341); /* bytes 1, 3 */
    mn = min_u16x2(mn, even);
    mn = min_u16x2(mn, odd);
    mx = max_u16x2(mx, even);
    mx = max_u16x2(mx, odd);
  }
};

/* u16: two samples a word, 32-bit sums (<= 8 * kItems * 65535 a tile) and
 * 64-bit sums of squares; the word is already two 16-bit lanes. */
struct WordU16 : PackedLanes<0> {
  using Sample = uint16_t;
  using SumSq = uint64_t;
  static constexpr int kMax = 65535;
  static constexpr uint64_t kPerVector = 8;

  static __device__ __forceinline__ void sums(unsigned w, unsigned &s,
                                              uint64_t &q) {
    unsigned lo = w & 0xffffu, hi = w >> 16;
    s += lo + hi;
    q += (uint64_t)lo * lo;
    q += (uint64_t)hi * hi;
  }
  static __device__ __forceinline__ void extremes(unsigned w, unsigned &mn,
                                                  unsigned &mx) {
    mn = min_u16x2(mn, w);
    mx = max_u16x2(mx, w);
  }
};

/* u8 / u16 (Word: WordU8, WordU16): a tile word by word, into the sums and
 * each vector's packed extremes; once the running min and max are the
 * type's bounds, into the sums only. */
/* Vector k of the tile (k < kItems), by selects (no local memory). */
__device__ __forceinline__ uint4
pick_vector(const uint4 (&v)[FastPolicy::kItems], int k) {
  uint4 r = v[0];
#pragma unroll
  for (int i = 1; i < FastPolicy::kItems; ++i)
    if (i == k)
      r = v[i];
  return r;
}

template <typename Word> struct AccInt : IntAcc {
  using Sample = typename Word::Sample;
  static constexpr int kMax = Word::kMax;
  /* IMGSTAT_FAST_KEEP_VEC: the vectors min_vec and max_vec */
  uint4 kept_min = make_uint4(0, 0, 0, 0), kept_max = kept_min;
  __device__ AccInt() : IntAcc(Word::kMax + 1) {}

  __device__ void add_tile(const uint4 (&v)[FastPolicy::kItems], int nvalid,
                           uint64_t tile) {
    unsigned s = 0;
    typename Word::SumSq q = 0;
    if (FastPolicy::kSaturatedSkip && vmin == 0 && vmax == Word::kMax) {
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k) {
        if (k < nvalid) {
          const unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
          for (int j = 0; j < 4; ++j)
            Word::sums(w[j], s, q);
        }
      }
      add_sums(Word::kPerVector * nvalid, s, q);
      return;
    }
    unsigned mn[FastPolicy::kItems], mx[FastPolicy::kItems];
#pragma unroll
    for (int k = 0; k < FastPolicy::kItems; ++k) {
      mn[k] = 0xffffffffu;
      mx[k] = 0;
      if (k < nvalid) {
        const unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          Word::sums(w[j], s, q);
          Word::extremes(w[j], mn[k], mx[k]);
        }
      }
    }
    if constexpr (IMGSTAT_FAST_KEEP_VEC) {
      unsigned hmin[FastPolicy::kItems], hmax[FastPolicy::kItems];
      unsigned tmin = 0xffffu, tmax = 0;
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k) {
        hmin[k] = Word::lane_min(mn[k]);
        hmax[k] = Word::lane_max(mx[k]);
        tmin = min(tmin, hmin[k]);
        tmax = max(tmax, hmax[k]);
      }
      add_sums(Word::kPerVector * nvalid, s, q);
      if ((int)tmin < vmin) {
        const int k = first_vector(hmin, nvalid, tmin);
        vmin = (int)tmin;
        min_vec = vec_of(tile, k, threadIdx.x);
        kept_min = pick_vector(v, k);
      }
      if ((int)tmax > vmax) {
        const int k = first_vector(hmax, nvalid, tmax);
        vmax = (int)tmax;
        max_vec = vec_of(tile, k, threadIdx.x);
        kept_max = pick_vector(v, k);
      }
    } else {
      end_tile<Word>(mn, mx, nvalid, tile, Word::kPerVector * nvalid, s, q);
    }
  }
  __device__ void add_sample(Sample x, uint64_t index) { add_one(x, index); }
};

using AccU8 = AccInt<WordU8>;
using AccU16 = AccInt<WordU16>;

/* (double)x of the float of bits u, a normal float (not a zero, denormal,
 * NaN or Inf; the caller checked): the exponent rebiased (+896) below the
 * sign, the mantissa's 23 bits at the top of the double's 52; exact, as
 * the conversion is (ist_fo_widen_normal, less the select for zeros). */
__device__ __forceinline__ double f32_widen_normal_nz(unsigned u) {
  const unsigned hi = (((unsigned)((int)u >> 3)) & 0x8fffffffu) + 0x38000000u;
  return __hiloint2double((int)hi, (int)(u << 29));
}

/* f32: NaN and Inf counted; finite samples into the thread's lane of the
 * canonical order (float_order.cuh), the vectors' extremes as above.
 * Lean: the plane's last, partial vector's extremes left to
 * f32_tail_extremes (F32Shape). */
template <bool Lean> struct AccF32 : Extremes<float> {
  using Sample = float;
  ist_fo_thread fo;
  __device__ AccF32()
      : Extremes<float>(__builtin_huge_valf(), -__builtin_huge_valf()) {}

  __device__ void add_tile(const uint4 (&v)[FastPolicy::kItems], int nvalid,
                           uint64_t tile) {
    const float inf = __int_as_float(0x7f800000);
    float hmin[FastPolicy::kItems], hmax[FastPolicy::kItems];
    float tmin = inf, tmax = -inf;
    if (IMGSTAT_F32_INT_WIDEN == 2 && nvalid == FastPolicy::kItems) {
      /* (u + 2^23) & the exponent's bits is below 2^24 exactly when the
       * exponent is 0 (zero, denormal) or 255 (NaN, Inf) */
      unsigned low = 0xffffffffu;
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k) {
        const unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
        for (int j = 0; j < 4; ++j)
          low = min(low, (w[j] + 0x00800000u) & 0x7f800000u);
      }
      if (low >= 0x01000000u) {
#pragma unroll
        for (int k = 0; k < FastPolicy::kItems; ++k) {
          const unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
          const double d[4] = {
              __dsub_rn(f32_widen_normal_nz(w[0]), fo.lane.shift),
              __dsub_rn(f32_widen_normal_nz(w[1]), fo.lane.shift),
              __dsub_rn(f32_widen_normal_nz(w[2]), fo.lane.shift),
              __dsub_rn(f32_widen_normal_nz(w[3]), fo.lane.shift)};
          ist_fo_group_sums(&fo.lane, d, 4);
          float mn = inf, mx = -inf;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            mn = fminf(mn, __uint_as_float(w[j]));
            mx = fmaxf(mx, __uint_as_float(w[j]));
          }
          hmin[k] = mn;
          hmax[k] = mx;
          tmin = fminf(tmin, mn);
          tmax = fmaxf(tmax, mx);
        }
        note_tile(hmin, hmax, nvalid, tile, tmin, tmax);
        return;
      }
    }
    if (IMGSTAT_F32_FINITE_TILES && nvalid == FastPolicy::kItems) {
      /* The common case, a whole tile of finite samples: the same sums and
       * extremes as the loop below, without its branches per sample. */
      float x[4 * FastPolicy::kItems];
      bool finite = true, normal = true;
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k) {
        const unsigned w[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          x[4 * k + j] = __uint_as_float(w[j]);
          finite &= fabsf(x[4 * k + j]) < inf; /* false for NaN and +-Inf */
          if (IMGSTAT_F32_INT_WIDEN == 1)
            normal &= ist_fo_normal_or_zero(x[4 * k + j]);
        }
      }
      if (finite) {
        if (IMGSTAT_F32_INT_WIDEN == 1 && normal)
          fo.add_normal(x);
        else
          fo.add_finite(x);
#pragma unroll
        for (int k = 0; k < FastPolicy::kItems; ++k) {
          float mn = inf, mx = -inf;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            mn = fminf(mn, x[4 * k + j]);
            mx = fmaxf(mx, x[4 * k + j]);
          }
          hmin[k] = mn;
          hmax[k] = mx;
          tmin = fminf(tmin, mn);
          tmax = fmaxf(tmax, mx);
        }
        note_tile(hmin, hmax, nvalid, tile, tmin, tmax);
        return;
      }
    }
#pragma unroll
    for (int k = 0; k < FastPolicy::kItems; ++k) {
      float mn = inf, mx = -inf;
      if (k < nvalid) {
        const float x[4] = {__uint_as_float(v[k].x), __uint_as_float(v[k].y),
                            __uint_as_float(v[k].z), __uint_as_float(v[k].w)};
        const unsigned finite = fo.add_group(x, 0xfu);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if ((finite >> j) & 1u) {
            mn = fminf(mn, x[j]);
            mx = fmaxf(mx, x[j]);
          }
        }
      }
      hmin[k] = mn;
      hmax[k] = mx;
      tmin = fminf(tmin, mn);
      tmax = fmaxf(tmax, mx);
    }
    note_tile(hmin, hmax, nvalid, tile, tmin, tmax);
  }
  __device__ void add_partial(const float (&x)[4], int m, uint64_t index) {
    const unsigned finite = fo.add_group(x, (1u << m) - 1u);
    if constexpr (!Lean) { /* else f32_tail_extremes */
      for (int j = 0; j < m; ++j)
        if ((finite >> j) & 1u)
          note_sample(x[j], index + j);
    }
  }
};

/* The thread's partial of an integer plane, its extremes' "indices" being
 * numbers that order them as their samples are ordered: the plane index of
 * the first sample of the vector in which the thread's first extreme lies,
 * or a head or tail sample's own (the vectors' ranges and those samples do
 * not overlap). The block's merge then picks the block's first extreme, and
 * block_first_positions re-reads that one vector: one 16-byte load a block
 * for each of min and max, not one a thread (a thread re-reading its own
 * at the end made 3 % more bytes and a round to memory after the loop). */
template <typename Acc>
__device__ imgstat_partial
thread_partial(const Acc &a, const Layout<typename Acc::Sample> &L) {
  using Sample = typename Acc::Sample;
  imgstat_partial p = ist_partial_empty();
  p.count = a.count;
  if (a.min_vec != kNone) {
    p.min = (double)a.vmin;
    p.min_index = L.index(a.min_vec, 0);
  }
  if (a.max_vec != kNone) {
    p.max = (double)a.vmax;
    p.max_index = L.index(a.max_vec, 0);
  }
  /* Scalar candidates (head/tail) merge by value, then index. */
  if (a.smin.index != kNone)
    ist_min_offer(&p.min, &p.min_index, (double)(Sample)a.smin.value,
                  a.smin.index);
  if (a.smax.index != kNone)
    ist_max_offer(&p.max, &p.max_index, (double)(Sample)a.smax.value,
                  a.smax.index);
  return p;
}

/* The block's merged partial (thread 0's) with exact first positions: an
 * extreme whose "index" is a vector's first sample is found in that vector
 * (both loads in flight at once); then the plane's offset `first` is
 * added. */
template <typename Sample>
__device__ void block_first_positions(imgstat_partial &p,
                                      const Layout<Sample> &L, uint64_t first,
                                      const uint4 *kept = nullptr) {
  constexpr int kPerVec = Layout<Sample>::kPerVec;
  const uint64_t lo = L.head, hi = L.head + L.nvec * kPerVec;
  const bool in_min = p.min_index >= lo && p.min_index < hi;
  const bool in_max = p.max_index >= lo && p.max_index < hi;
  uint4 vmin = make_uint4(0, 0, 0, 0), vmax = vmin;
  if (kept) { /* the vectors, kept by their threads */
    if (in_min)
      vmin = kept[0];
    if (in_max)
      vmax = kept[1];
  } else {
    if (in_min)
      vmin = __ldg(L.vec + (p.min_index - lo) / kPerVec);
    if (in_max)
      vmax = __ldg(L.vec + (p.max_index - lo) / kPerVec);
  }
  if (in_min) /* always found: the vector holds the value */
    p.min_index +=
        (uint64_t)max(find_in_vector<Sample>(vmin, (unsigned)p.min).j, 0);
  if (in_max)
    p.max_index +=
        (uint64_t)max(find_in_vector<Sample>(vmax, (unsigned)p.max).j, 0);
  if (p.min_index != kNone)
    p.min_index += first;
  if (p.max_index != kNone)
    p.max_index += first;
}

__device__ void finish_sums(const IntAcc &a, imgstat_partial &p) {
  p.sum = a.sum;
  p.sumsq = a.sumsq;
}

/* The block's partial of an integer plane (thread 0's), as thread_partial +
 * block_merge give it, merged on integers alone: the count, the sums, and
 * each extreme as one 64-bit key, (value << 48 | order) for the min and
 * ((kMax - value) << 48 | order) for the max, the order being the
 * extreme's "index" of thread_partial (a vector's first sample or a
 * head/tail sample's own, < n < 2^48): the smallest key is the one the
 * partials' merge keeps (smaller value, then smaller index). Integer sums
 * are exact in any order. */
template <int kMax, typename Acc, typename Sample>
__device__ imgstat_partial int_block_merge(const Acc &a,
                                           const Layout<Sample> &L,
                                           uint4 (&kept)[2]) {
  constexpr int kWarps = FastPolicy::kBlock / 32;
  constexpr unsigned long long kNoKey = ~0ull;
  const unsigned t = threadIdx.x;
  unsigned long long v[5] = {a.count, a.sum, a.sumsq, kNoKey, kNoKey};
  if (a.min_vec != kNone)
    v[3] = (unsigned long long)a.vmin << 48 | L.index(a.min_vec, 0);
  if (a.max_vec != kNone)
    v[4] = (unsigned long long)(kMax - a.vmax) << 48 | L.index(a.max_vec, 0);
  if (a.smin.index != kNone)
    v[3] = min(v[3], (unsigned long long)a.smin.value << 48 | a.smin.index);
  if (a.smax.index != kNone)
    v[4] = min(v[4],
               (unsigned long long)(kMax - a.smax.value) << 48 | a.smax.index);
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
#pragma unroll
    for (int f = 0; f < 3; ++f)
      v[f] += __shfl_xor_sync(0xffffffffu, v[f], m);
#pragma unroll
    for (int f = 3; f < 5; ++f)
      v[f] = min(v[f], __shfl_xor_sync(0xffffffffu, v[f], m));
  }
  __shared__ unsigned long long warp_v[5][kWarps];
  if ((t & 31) == 0)
#pragma unroll
    for (int f = 0; f < 5; ++f)
      warp_v[f][t / 32] = v[f];
  __syncthreads();
  if constexpr (IMGSTAT_FAST_KEEP_VEC) {
    /* the block's first extremes' vectors, from the threads that hold them
     * (a key is a thread's own: its vector's first sample) */
    unsigned long long best[2] = {kNoKey, kNoKey};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      best[0] = min(best[0], warp_v[3][w]);
      best[1] = min(best[1], warp_v[4][w]);
    }
    if (a.min_vec != kNone &&
        best[0] == ((unsigned long long)a.vmin << 48 | L.index(a.min_vec, 0)))
      kept[0] = a.kept_min;
    if (a.max_vec != kNone &&
        best[1] ==
            ((unsigned long long)(kMax - a.vmax) << 48 | L.index(a.max_vec, 0)))
      kept[1] = a.kept_max;
    __syncthreads();
  }
  imgstat_partial p = ist_partial_empty();
  if (t == 0) {
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
#pragma unroll
      for (int f = 0; f < 3; ++f)
        v[f] += warp_v[f][w];
#pragma unroll
      for (int f = 3; f < 5; ++f)
        v[f] = min(v[f], warp_v[f][w]);
    }
    constexpr unsigned long long kOrder = (1ull << 48) - 1;
    p.count = v[0];
    p.sum = v[1];
    p.sumsq = v[2];
    if (v[3] != kNoKey) {
      p.min = (double)(int)(v[3] >> 48);
      p.min_index = v[3] & kOrder;
    }
    if (v[4] != kNoKey) {
      p.max = (double)(kMax - (int)(v[4] >> 48));
      p.max_index = v[4] & kOrder;
    }
  }
  return p;
}

/* Block `block` of `nblocks` over one integer plane of n samples: its
 * partial (thread 0's is the block's). The one-image kernel and the batched
 * one (one launch over the planes of many images) both call it, so a plane's
 * block partials are the same either way. (f32 planes take the canonical
 * order's kernel, fast_f32_kernel.) */
template <typename Acc>
__device__ imgstat_partial fast_plane_block(const typename Acc::Sample *plane,
                                            uint64_t n, uint64_t first_index,
                                            uint64_t block, uint64_t nblocks) {
  using Sample = typename Acc::Sample;
  const unsigned t = threadIdx.x;
  Layout<Sample> L(plane, n);
  Acc acc;

  const uint64_t full = L.nvec / FastPolicy::kTile;
  uint64_t tile = block;
  if constexpr (FastPolicy::kPrefetch) {
    uint4 cur[FastPolicy::kItems];
    if (tile < full) {
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k)
        cur[k] = __ldg(L.vec + vec_of(tile, k, t));
    }
    for (; tile < full; tile += nblocks) {
      uint4 next[FastPolicy::kItems];
      uint64_t nt = tile + nblocks;
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k)
        next[k] = nt < full ? __ldg(L.vec + vec_of(nt, k, t))
                            : make_uint4(0, 0, 0, 0);
      acc.add_tile(cur, FastPolicy::kItems, tile);
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k)
        cur[k] = next[k];
    }
  } else {
    for (; tile < full; tile += nblocks) {
      uint4 v[FastPolicy::kItems];
#pragma unroll
      for (int k = 0; k < FastPolicy::kItems; ++k)
        v[k] = __ldg(L.vec + vec_of(tile, k, t));
      acc.add_tile(v, FastPolicy::kItems, tile);
    }
  }
  /* The last, partial tile falls to the block whose turn it is, after all of
   * its full tiles (increasing order is kept). Valid vectors of a thread are
   * a prefix k < nvalid. */
  if (tile == full && full * FastPolicy::kTile < L.nvec) {
    uint4 v[FastPolicy::kItems];
    int nvalid = 0;
#pragma unroll
    for (int k = 0; k < FastPolicy::kItems; ++k) {
      uint64_t i = vec_of(tile, k, t);
      if (i < L.nvec) {
        v[k] = __ldg(L.vec + i);
        nvalid = k + 1;
      } else {
        v[k] = make_uint4(0, 0, 0, 0);
      }
    }
    if (nvalid > 0)
      acc.add_tile(v, nvalid, tile);
  }
  if (block == 0) {
    if (t < L.head)
      acc.add_sample(plane[t], t);
    uint64_t tail0 = L.head + L.nvec * Layout<Sample>::kPerVec;
    if (t >= 32 && t - 32 < L.tail)
      acc.add_sample(plane[tail0 + t - 32], tail0 + t - 32);
  }

  imgstat_partial p;
  __shared__ uint4 kept[2];
  if (IMGSTAT_FAST_INT_MERGE) {
    p = int_block_merge<Acc::kMax>(acc, L, kept);
  } else {
    p = thread_partial(acc, L);
    finish_sums(acc, p);
    p = block_merge<false, FastPolicy::kBlock>(p);
  }
  if (t == 0)
    block_first_positions(
        p, L, first_index,
        IMGSTAT_FAST_INT_MERGE && IMGSTAT_FAST_KEEP_VEC ? kept : nullptr);
  return p;
}

template <typename Acc>
__global__ void __launch_bounds__(FastPolicy::kBlock,
                                  FastPolicy::kPlaneBlocksPerSm)
    fast_stats_kernel(ist_pass pass) {
  pdl_trigger();
  using Sample = typename Acc::Sample;
  const Sample *plane =
      static_cast<const Sample *>(pass.in) + blockIdx.y * pass.in_stride;
  imgstat_partial p = fast_plane_block<Acc>(plane, pass.n, pass.first_index,
                                            blockIdx.x, gridDim.x);
  if (threadIdx.x == 0)
    static_cast<imgstat_partial *>(
        pass.out)[blockIdx.y * pass.out_stride + blockIdx.x] = p;
}

/* Sum of ints with 16-byte loads (the benchmark's fast row). */
__global__ void __launch_bounds__(FastPolicy::kBlock)
    fast_sum_i32_kernel(ist_pass pass) {
  pdl_trigger();
  const unsigned t = threadIdx.x;
  const int *in =
      static_cast<const int *>(pass.in) + blockIdx.y * pass.in_stride;
  uint64_t mis = ((uintptr_t)in & 15) / 4;
  uint64_t head = mis ? 4 - mis : 0;
  if (head > pass.n)
    head = pass.n;
  uint64_t nvec = (pass.n - head) / 4;
  const int4 *vec = reinterpret_cast<const int4 *>(in + head);
  long long s = 0;
  const uint64_t full = nvec / SumPolicy::kTile;
  uint64_t tile = blockIdx.x;
  for (; tile < full; tile += gridDim.x) {
    int4 v[SumPolicy::kItems];
#pragma unroll
    for (int k = 0; k < SumPolicy::kItems; ++k)
      v[k] = __ldg(vec + tile * SumPolicy::kTile + k * SumPolicy::kBlock + t);
#pragma unroll
    for (int k = 0; k < SumPolicy::kItems; ++k)
      s += (long long)v[k].x + v[k].y + (long long)v[k].z + v[k].w;
  }
  if (tile == full) {
    for (int k = 0; k < SumPolicy::kItems; ++k) {
      uint64_t i = tile * SumPolicy::kTile + k * SumPolicy::kBlock + t;
      if (i < nvec) {
        int4 v = __ldg(vec + i);
        s += (long long)v.x + v.y + (long long)v.z + v.w;
      }
    }
  }
  if (blockIdx.x == 0) {
    if (t < head)
      s += in[t];
    uint64_t tail0 = head + nvec * 4;
    if (t >= 32 && tail0 + (t - 32) < pass.n)
      s += in[tail0 + t - 32];
  }
  s = block_sum<SumPolicy::kBlock>(s);
  if (t == 0)
    static_cast<long long *>(
        pass.out)[blockIdx.y * pass.out_stride + blockIdx.x] = s;
}

/* ---- f32: the canonical order (float_order.h) ---------------------------
 *
 * Why a kernel of its own: the grid-stride partition above rounds float sums
 * in an order of its own; this one keeps the same loads (thread t reads
 * vectors t, t + 256, ... of each tile, kItems at a time) but walks whole
 * chunks (block b takes chunks b, b + grid, ...), so that thread t is
 * exactly lane t of the canonical order, and ends each chunk with the lane
 * tree: every chunk's (count, mean, M2) has the CPU's bits. Extremes and
 * NaN/Inf counts are kept per thread across chunks as for the integer
 * kernels and ride on the partial of the block's first chunk. Pass 1 writes
 * one partial per chunk; the tree fold below reduces them. */
static_assert(FastPolicy::kBlock == (int)IST_FO_LANES,
              "one thread per lane of the float order");
static_assert(FastPolicy::kTile == FastPolicy::kBlock * FastPolicy::kItems,
              "the tiles of ist_fo_chunk");

/* The thread's extremes: its recorded vectors re-read (as in
 * thread_partial), the scalar candidates offered after them. */
template <bool Aligned, int Stride, bool Lean>
__device__ imgstat_partial f32_thread_extremes(const AccF32<Lean> &a,
                                               const float *plane,
                                               uint64_t first) {
  imgstat_partial p = ist_partial_empty();
  p.nan_count = a.fo.nan_count;
  p.inf_count = a.fo.inf_count;
  uint4 vmin = make_uint4(0, 0, 0, 0), vmax = vmin;
  if (a.min_vec != kNone)
    vmin = ist_fo_load_vec<Aligned, Stride>(plane, a.min_vec);
  if (a.max_vec != kNone)
    vmax = ist_fo_load_vec<Aligned, Stride>(plane, a.max_vec);
  if (a.min_vec != kNone) {
    Found<float> f = find_in_vector<float>(vmin, a.vmin);
    if (f.j >= 0) {
      p.min = (double)f.value;
      p.min_index = first + a.min_vec * 4 + f.j;
    }
  }
  if (a.max_vec != kNone) {
    Found<float> f = find_in_vector<float>(vmax, a.vmax);
    if (f.j >= 0) {
      p.max = (double)f.value;
      p.max_index = first + a.max_vec * 4 + f.j;
    }
  }
  if (a.smin.index != kNone)
    ist_min_offer(&p.min, &p.min_index, (double)a.smin.value,
                  first + a.smin.index);
  if (a.smax.index != kNone)
    ist_max_offer(&p.max, &p.max_index, (double)a.smax.value,
                  first + a.smax.index);
  return p;
}

/* The thread's extremes as f32_thread_extremes gives them, but each
 * recorded vector standing for its first sample (plane index 4 v; values
 * equal under == then merge by that index as by the sample's own, the
 * vectors being disjoint), for f32_block_first to re-read the block's one
 * vector. The scalar candidates (the plane's last, partial vector, after
 * every whole one) keep their own index. */
template <bool Lean>
__device__ imgstat_partial f32_thread_order(const AccF32<Lean> &a) {
  imgstat_partial p = ist_partial_empty();
  p.nan_count = a.fo.nan_count;
  p.inf_count = a.fo.inf_count;
  if (a.min_vec != kNone) {
    p.min = (double)a.vmin;
    p.min_index = a.min_vec * 4;
  }
  if (a.max_vec != kNone) {
    p.max = (double)a.vmax;
    p.max_index = a.max_vec * 4;
  }
  if (a.smin.index != kNone)
    ist_min_offer(&p.min, &p.min_index, (double)a.smin.value, a.smin.index);
  if (a.smax.index != kNone)
    ist_max_offer(&p.max, &p.max_index, (double)a.smax.value, a.smax.index);
  return p;
}

/* The block's merged extremes (thread 0's) with exact first positions: an
 * extreme standing for a whole vector is found in it (both loads in
 * flight), the value being the vector's first sample equal to it (as
 * f32_thread_extremes keeps it: -0 or +0); then `first` is added. */
template <bool Aligned, int Stride>
__device__ void f32_block_first(imgstat_partial &p, const float *plane,
                                uint64_t n, uint64_t first) {
  const uint64_t whole = n / 4 * 4;
  const bool in_min = p.min_index < whole, in_max = p.max_index < whole;
  uint4 vmin = make_uint4(0, 0, 0, 0), vmax = vmin;
  if (in_min)
    vmin = ist_fo_load_vec<Aligned, Stride>(plane, p.min_index / 4);
  if (in_max)
    vmax = ist_fo_load_vec<Aligned, Stride>(plane, p.max_index / 4);
  if (in_min) { /* always found: the vector holds the value */
    Found<float> f = find_in_vector<float>(vmin, (float)p.min);
    if (f.j >= 0) {
      p.min = (double)f.value;
      p.min_index += (uint64_t)f.j;
    }
  }
  if (in_max) {
    Found<float> f = find_in_vector<float>(vmax, (float)p.max);
    if (f.j >= 0) {
      p.max = (double)f.value;
      p.max_index += (uint64_t)f.j;
    }
  }
  if (p.min_index != kNone)
    p.min_index += first;
  if (p.max_index != kNone)
    p.max_index += first;
}

/* F32Shape's kLean: the plane's last, partial vector offered to the
 * block's merged extremes p (indices absolute, `first` added) by the block
 * whose chunk holds it: its finite samples in order, after every whole
 * vector (as AccF32::add_partial's candidates are otherwise). */
template <int Stride>
__device__ void f32_tail_extremes(imgstat_partial &p, const float *plane,
                                  uint64_t n, uint64_t first) {
  const uint64_t whole = n / 4 * 4;
  if (n == whole || (whole / IST_FO_CHUNK) % gridDim.x != blockIdx.x)
    return;
  for (uint64_t i = whole; i < n; ++i) {
    const float x = __ldg(plane + i * Stride);
    if (ist_fo_finite(x)) {
      ist_min_offer(&p.min, &p.min_index, (double)x, first + i);
      ist_max_offer(&p.max, &p.max_index, (double)x, first + i);
    }
  }
}

template <bool Aligned, int Stride>
__global__ void __launch_bounds__(FastPolicy::kBlock,
                                  F32Shape<Stride>::kBlocksPerSm)
    fast_f32_kernel(ist_pass pass) {
  constexpr bool kLean = F32Shape<Stride>::kLean;
  pdl_wait(); /* launched after the shift kernel */
  pdl_trigger();
  __shared__ ist_fo_moments lane_roots[FastPolicy::kBlock / 32];
  const unsigned t = threadIdx.x;
  const float *plane =
      static_cast<const float *>(pass.in) + blockIdx.y * pass.in_stride;
  imgstat_partial *out =
      static_cast<imgstat_partial *>(pass.out) + blockIdx.y * pass.out_stride;
  const uint64_t n = pass.n;
  const uint64_t chunks = (n + IST_FO_CHUNK - 1) / IST_FO_CHUNK;
  /* the plane's shift K: every mean stays relative to it */
  const double shift_k = pass.k_given ? pass.k : pass.k_dev[blockIdx.y];
  AccF32<kLean> acc;
  acc.fo.set_shift(shift_k);
  imgstat_partial first_chunk = ist_partial_empty(); /* thread 0's */
  constexpr int kPrefetch = IMGSTAT_F32_PREFETCH;
  ist_fo_tile<FastPolicy::kItems> head;
  head.nvalid = 0;
  if constexpr (kPrefetch > 0)
    ist_fo_load_chunk_head<FastPolicy::kBlock, FastPolicy::kItems, Aligned,
                           Stride>(plane, n, blockIdx.x, head);
  for (uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    ist_fo_moments m =
        ist_fo_chunk<FastPolicy::kBlock, FastPolicy::kItems, kPrefetch, Aligned,
                     Stride>(plane, n, c, c + gridDim.x, acc, lane_roots, head);
    if (t == 0) {
      imgstat_partial q = ist_partial_empty();
      q.count = m.count;
      q.mean = m.mean;
      q.m2 = m.m2;
      if (kLean) {
        if (c == blockIdx.x && pass.last && pass.add_k) /* the plane's */
          ist_fo_add_shift(&q, acc.fo.lane.shift);
        out[c] = q; /* the first chunk's extremes added at the end */
      } else if (c == blockIdx.x) {
        first_chunk = q;
      } else {
        out[c] = q;
      }
    }
  }
  imgstat_partial p;
  /* planes only (H200: 1.17 vs 1.18 x CUB; interleaved 1.69 vs 1.31) */
  if (IMGSTAT_F32_BLOCK_FIRST && Stride == 1) {
    p = f32_thread_order(acc);
    p = block_merge<true, FastPolicy::kBlock>(p); /* counts 0 */
    if (t == 0)
      f32_block_first<Aligned, Stride>(p, plane, n, pass.first_index);
  } else {
    p = f32_thread_extremes<Aligned, Stride>(acc, plane, pass.first_index);
    p = block_merge<true, FastPolicy::kBlock>(p); /* counts 0: extremes only */
  }
  if (kLean && t == 0) {
    f32_tail_extremes<Stride>(p, plane, n, pass.first_index);
    imgstat_partial &o = out[blockIdx.x]; /* blockIdx.x < max(chunks, 1) */
    if (blockIdx.x >= chunks)             /* no chunk: an empty plane */
      o = ist_partial_empty();
    o.min = p.min;
    o.max = p.max;
    o.min_index = p.min_index;
    o.max_index = p.max_index;
    o.nan_count = p.nan_count;
    o.inf_count = p.inf_count;
  }
  if (!kLean && t == 0) {
    first_chunk.min = p.min;
    first_chunk.max = p.max;
    first_chunk.min_index = p.min_index;
    first_chunk.max_index = p.max_index;
    first_chunk.nan_count = p.nan_count;
    first_chunk.inf_count = p.inf_count;
    if (pass.last && pass.add_k) /* one chunk: this is the plane's */
      ist_fo_add_shift(&first_chunk, acc.fo.lane.shift);
    out[blockIdx.x] = first_chunk; /* blockIdx.x < max(chunks, 1) */
  }
}

/* ---- interleaved f32, every channel in one grid (IMGSTAT_F32_HWC_ALL) ----
 *
 * The same lanes as fast_f32_kernel's over each channel's plane (the
 * samples C floats apart): thread t is lane t of chunk c of every channel,
 * and takes vector v (pixels 4v .. 4v + 3) of each channel in increasing v,
 * Items at a time (tile vectors tile * 256 * Items + k * 256 + t), from
 * the C aligned 16-byte vectors holding those 4 pixels. Each channel's
 * lane adds its groups as AccF32 does (the same sums in the same order;
 * NaN / Inf counted), its extremes by vector: the first vector in which
 * the running min (max) became strictly smaller (larger), re-read at the
 * end; the plane's last partial vector's extremes offered by thread 0 of
 * its block (f32_tail_extremes). */
#if IMGSTAT_F32_HWC_ALL /* not compiled otherwise */
constexpr int kF32HwcBlocksPerSm = IMGSTAT_F32_HWC_BLOCKS_PER_SM;
constexpr int kF32HwcItems = IMGSTAT_F32_HWC_ITEMS;
static_assert((IST_FO_CHUNK / 4) % (IST_FO_LANES * kF32HwcItems) == 0,
              "whole tiles a chunk");

/* One channel's lane of a thread: the lane's sums, its NaN / Inf counts
 * (32 bits: a thread sees at most n / 256 of a channel's samples) and its
 * running extremes with the ordinal (v / 256) of the vector each was first
 * seen in. */
struct F32HwcLane {
  ist_fo_acc lane;
  uint32_t nan_count = 0, inf_count = 0;
  float vmin = __builtin_huge_valf(), vmax = -__builtin_huge_valf();
  uint32_t min_ord = UINT32_MAX, max_ord = UINT32_MAX;

  __device__ void add_vec(const float (&x)[4], uint32_t ord) {
    const float inf = __int_as_float(0x7f800000);
    float mn = inf, mx = -inf;
    bool normal = false; /* IMGSTAT_F32_INT_WIDEN == 2: as AccF32's tiles */
    if constexpr (IMGSTAT_F32_INT_WIDEN == 2) {
      unsigned low = 0xffffffffu;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        low = min(low, (__float_as_uint(x[j]) + 0x00800000u) & 0x7f800000u);
      normal = low >= 0x01000000u;
    }
    if (normal) {
      const double d[4] = {
          __dsub_rn(f32_widen_normal_nz(__float_as_uint(x[0])), lane.shift),
          __dsub_rn(f32_widen_normal_nz(__float_as_uint(x[1])), lane.shift),
          __dsub_rn(f32_widen_normal_nz(__float_as_uint(x[2])), lane.shift),
          __dsub_rn(f32_widen_normal_nz(__float_as_uint(x[3])), lane.shift)};
      ist_fo_group_sums(&lane, d, 4);
      mn = fminf(fminf(x[0], x[1]), fminf(x[2], x[3]));
      mx = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    } else if (fabsf(x[0]) < inf && fabsf(x[1]) < inf && fabsf(x[2]) < inf &&
               fabsf(x[3]) < inf) { /* false for NaN and +-Inf */
      const double d[4] = {__dsub_rn((double)x[0], lane.shift),
                           __dsub_rn((double)x[1], lane.shift),
                           __dsub_rn((double)x[2], lane.shift),
                           __dsub_rn((double)x[3], lane.shift)};
      ist_fo_group_sums(&lane, d, 4);
      mn = fminf(fminf(x[0], x[1]), fminf(x[2], x[3]));
      mx = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    } else {
      double d[4];
      unsigned finite = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        d[j] = 0.0;
        if (x[j] != x[j]) {
          nan_count += 1;
        } else if (fabsf(x[j]) == inf) {
          inf_count += 1;
        } else {
          d[j] = __dsub_rn((double)x[j], lane.shift);
          finite |= 1u << j;
          mn = fminf(mn, x[j]);
          mx = fmaxf(mx, x[j]);
        }
      }
      if (finite)
        ist_fo_group_sums(&lane, d, (uint32_t)__popc(finite));
    }
    if (mn < vmin) {
      vmin = mn;
      min_ord = ord;
    }
    if (mx > vmax) {
      vmax = mx;
      max_ord = ord;
    }
  }
  /* The plane's last m < 4 samples (sums and counts only). */
  __device__ void add_partial(const float (&x)[4], int m) {
    double d[4];
    unsigned finite = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      d[j] = 0.0;
      if (j >= m)
        continue;
      if (x[j] != x[j])
        nan_count += 1;
      else if (fabsf(x[j]) == __int_as_float(0x7f800000))
        inf_count += 1;
      else {
        d[j] = __dsub_rn((double)x[j], lane.shift);
        finite |= 1u << j;
      }
    }
    if (finite)
      ist_fo_group_sums(&lane, d, (uint32_t)__popc(finite));
  }
};

template <int C>
__global__ void __launch_bounds__(FastPolicy::kBlock, kF32HwcBlocksPerSm)
    fast_f32_hwc_kernel(ist_pass pass) {
  pdl_wait(); /* launched after the shift kernel */
  pdl_trigger();
  constexpr int kItems = kF32HwcItems;
  constexpr uint64_t kTileVecs = (uint64_t)FastPolicy::kBlock * kItems;
  constexpr int kTiles = (int)((IST_FO_CHUNK / 4) / kTileVecs);
  __shared__ ist_fo_moments lane_roots[FastPolicy::kBlock / 32];
  const unsigned t = threadIdx.x;
  const float *img = static_cast<const float *>(pass.in);
  const uint4 *img4 = reinterpret_cast<const uint4 *>(img);
  imgstat_partial *out = static_cast<imgstat_partial *>(pass.out);
  const uint64_t n = pass.n, nvec = n / 4;
  const uint64_t chunks = (n + IST_FO_CHUNK - 1) / IST_FO_CHUNK;
  F32HwcLane acc[C];
#pragma unroll
  for (int ch = 0; ch < C; ++ch)
    acc[ch].lane.shift = pass.k_given ? pass.k : pass.k_dev[ch];
  for (uint64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
#pragma unroll
    for (int ch = 0; ch < C; ++ch) {
      acc[ch].lane.count = 0;
      acc[ch].lane.s1 = acc[ch].lane.s2 = acc[ch].lane.e = 0.0;
    }
    for (int jt = 0; jt < kTiles; ++jt) {
      const uint64_t v0 = (c * kTiles + jt) * kTileVecs + t;
      if (v0 >= nvec)
        break; /* past the plane's whole vectors */
      uint4 w[kItems][C];
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const uint64_t v = v0 + (uint64_t)k * FastPolicy::kBlock;
#pragma unroll
        for (int i = 0; i < C; ++i)
          w[k][i] = v < nvec ? __ldg(img4 + v * C + i) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const uint64_t v = v0 + (uint64_t)k * FastPolicy::kBlock;
        if (v < nvec) {
          unsigned u[4 * C]; /* the 4 pixels' samples, pixel-major */
#pragma unroll
          for (int i = 0; i < C; ++i) {
            u[4 * i] = w[k][i].x;
            u[4 * i + 1] = w[k][i].y;
            u[4 * i + 2] = w[k][i].z;
            u[4 * i + 3] = w[k][i].w;
          }
#pragma unroll
          for (int ch = 0; ch < C; ++ch) {
            const float x[4] = {
                __uint_as_float(u[ch]), __uint_as_float(u[C + ch]),
                __uint_as_float(u[2 * C + ch]), __uint_as_float(u[3 * C + ch])};
            acc[ch].add_vec(x, (uint32_t)(v / FastPolicy::kBlock));
          }
        }
      }
    }
    /* the plane's last, partial vector: lane nvec % 256 of its chunk */
    if (n % 4 != 0 && t == nvec % IST_FO_LANES &&
        (nvec * 4) / IST_FO_CHUNK == c) {
      const int m = (int)(n % 4);
#pragma unroll
      for (int ch = 0; ch < C; ++ch) {
        float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int j = 0; j < m; ++j)
          x[j] = __ldg(img + (nvec * 4 + j) * C + ch);
        acc[ch].add_partial(x, m);
      }
    }
#pragma unroll
    for (int ch = 0; ch < C; ++ch) {
      ist_fo_moments m = ist_fo_block_tree_moments<FastPolicy::kBlock>(
          ist_fo_lane_finish(&acc[ch].lane), lane_roots);
      if (t == 0) {
        imgstat_partial q = ist_partial_empty();
        q.count = m.count;
        q.mean = m.mean;
        q.m2 = m.m2;
        if (c == blockIdx.x && pass.last && pass.add_k) /* the plane's */
          ist_fo_add_shift(&q, acc[ch].lane.shift);
        out[ch * pass.out_stride + c] = q; /* extremes added at the end */
      }
    }
  }
#pragma unroll
  for (int ch = 0; ch < C; ++ch) {
    const F32HwcLane &a = acc[ch];
    const float *plane = img + ch;
    imgstat_partial p = ist_partial_empty();
    p.nan_count = a.nan_count;
    p.inf_count = a.inf_count;
    const uint64_t vmin_at = (uint64_t)a.min_ord * FastPolicy::kBlock + t;
    const uint64_t vmax_at = (uint64_t)a.max_ord * FastPolicy::kBlock + t;
    uint4 vmin = make_uint4(0, 0, 0, 0), vmax = vmin;
    if (a.min_ord != UINT32_MAX)
      vmin = ist_fo_load_vec<false, C>(plane, vmin_at);
    if (a.max_ord != UINT32_MAX)
      vmax = ist_fo_load_vec<false, C>(plane, vmax_at);
    if (a.min_ord != UINT32_MAX) {
      Found<float> f = find_in_vector<float>(vmin, a.vmin);
      if (f.j >= 0) {
        p.min = (double)f.value;
        p.min_index = pass.first_index + vmin_at * 4 + f.j;
      }
    }
    if (a.max_ord != UINT32_MAX) {
      Found<float> f = find_in_vector<float>(vmax, a.vmax);
      if (f.j >= 0) {
        p.max = (double)f.value;
        p.max_index = pass.first_index + vmax_at * 4 + f.j;
      }
    }
    p = block_merge<true, FastPolicy::kBlock>(p); /* counts 0: extremes */
    if (t == 0) {
      f32_tail_extremes<C>(p, plane, n, pass.first_index);
      imgstat_partial &o = out[ch * pass.out_stride + blockIdx.x];
      if (blockIdx.x >= chunks) /* no chunk: an empty plane */
        o = ist_partial_empty();
      o.min = p.min;
      o.max = p.max;
      o.min_index = p.min_index;
      o.max_index = p.max_index;
      o.nan_count = p.nan_count;
      o.inf_count = p.inf_count;
    }
    __syncthreads(); /* block_merge's slots, again for the next channel */
  }
}

#endif /* IMGSTAT_F32_HWC_ALL */

/* Block b's share of a fold of integer partials (u8 / u16 samples), the
 * same result as ist_fo_fold_block_at's over in[b * Block * Items, (b + 1)
 * * Block * Items) of n (thread 0's): integer partials merge exactly in any
 * order, so each thread takes every Block-th partial (coalesced), and the
 * merge is on integers: the count, the sums, and each extreme as one
 * 64-bit key, (value << 48 | index) for the min and ((65535 - value) << 48
 * | index) for the max (values < 2^16, indices < 2^48): the smallest key
 * is the one the partials' merge keeps (smaller value, then smaller
 * index). */
__device__ imgstat_partial int_fold_block(const imgstat_partial *in, uint64_t n,
                                          uint64_t b) {
  constexpr int kWarps = FoldPolicy::kBlock / 32;
  constexpr unsigned long long kNoKey = ~0ull;
  const unsigned t = threadIdx.x;
  unsigned long long v[5] = {0, 0, 0, kNoKey, kNoKey};
  const uint64_t base = b * FoldPolicy::kBlock * FoldPolicy::kItems;
#pragma unroll
  for (int k = 0; k < FoldPolicy::kItems; ++k) {
    const uint64_t i = base + (uint64_t)k * FoldPolicy::kBlock + t;
    if (i < n) {
      const imgstat_partial &q = in[i];
      v[0] += q.count;
      v[1] += q.sum;
      v[2] += q.sumsq;
      if (q.min_index != kNone)
        v[3] = min(v[3], (unsigned long long)q.min << 48 | q.min_index);
      if (q.max_index != kNone)
        v[4] = min(v[4],
                   (unsigned long long)(65535.0 - q.max) << 48 | q.max_index);
    }
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
#pragma unroll
    for (int f = 0; f < 3; ++f)
      v[f] += __shfl_xor_sync(0xffffffffu, v[f], m);
#pragma unroll
    for (int f = 3; f < 5; ++f)
      v[f] = min(v[f], __shfl_xor_sync(0xffffffffu, v[f], m));
  }
  __shared__ unsigned long long warp_v[5][kWarps];
  if ((t & 31) == 0)
#pragma unroll
    for (int f = 0; f < 5; ++f)
      warp_v[f][t / 32] = v[f];
  __syncthreads();
  imgstat_partial p = ist_partial_empty();
  if (t == 0) {
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
#pragma unroll
      for (int f = 0; f < 3; ++f)
        v[f] += warp_v[f][w];
#pragma unroll
      for (int f = 3; f < 5; ++f)
        v[f] = min(v[f], warp_v[f][w]);
    }
    constexpr unsigned long long kIndex = (1ull << 48) - 1;
    p.count = v[0];
    p.sum = v[1];
    p.sumsq = v[2];
    if (v[3] != kNoKey) {
      p.min = (double)(v[3] >> 48);
      p.min_index = v[3] & kIndex;
    }
    if (v[4] != kNoKey) {
      p.max = 65535.0 - (double)(v[4] >> 48);
      p.max_index = v[4] & kIndex;
    }
  }
  return p;
}

/* The fold of partials, for every sample type: the chunk tree of
 * float_order.h in aligned subtrees of Block * Items (integer partials
 * merge exactly in any order, so they share it). */
template <bool IsFloat>
__global__ void __launch_bounds__(FoldPolicy::kBlock)
    fold_stats_kernel(ist_pass pass) {
  pdl_wait();
  __shared__ imgstat_partial warp_roots[FoldPolicy::kBlock / 32];
  const imgstat_partial *in = static_cast<const imgstat_partial *>(pass.in) +
                              blockIdx.y * pass.in_stride;
  imgstat_partial p;
  if constexpr (!IsFloat && IMGSTAT_FOLD_INT)
    p = int_fold_block(in, pass.n, blockIdx.x);
  else
    p = ist_fo_fold_block<FoldPolicy::kBlock, FoldPolicy::kItems, IsFloat>(
        in, pass.n, warp_roots);
  if (IsFloat && pass.last && pass.add_k && threadIdx.x == 0)
    ist_fo_add_shift(&p, pass.k_given ? pass.k : pass.k_dev[blockIdx.y]);
  if (threadIdx.x == 0)
    static_cast<imgstat_partial *>(
        pass.out)[blockIdx.y * pass.out_stride + blockIdx.x] = p;
}

__global__ void __launch_bounds__(FoldPolicy::kBlock)
    fold_sum_i64_kernel(ist_pass pass) {
  pdl_wait();
  const long long *in =
      static_cast<const long long *>(pass.in) + blockIdx.y * pass.in_stride;
  constexpr uint64_t kChunk = (uint64_t)FoldPolicy::kBlock * FoldPolicy::kItems;
  uint64_t base = (uint64_t)blockIdx.x * kChunk;
  long long s = 0;
  for (int k = 0; k < FoldPolicy::kItems; ++k) {
    uint64_t i = base + (uint64_t)k * FoldPolicy::kBlock + threadIdx.x;
    if (i < pass.n)
      s += in[i];
  }
  s = block_sum<FoldPolicy::kBlock>(s);
  if (threadIdx.x == 0)
    static_cast<long long *>(
        pass.out)[blockIdx.y * pass.out_stride + blockIdx.x] = s;
}

/* ---- batched: the planes of many images in one launch ------------------
 * Each plane (a segment) gets the blocks the one-image kernel would give it
 * (ist_fast_grid of its bytes, one channel) and the same fold, so each
 * image's partials are those of imgstat_gpu_image_stats, bit for bit; what
 * the batch saves is a launch, a fold launch and a synchronisation per
 * image. A block finds its plane by ist_segment_of (reduce.cuh). */

template <typename Acc>
__global__ void __launch_bounds__(FastPolicy::kBlock, FastPolicy::kBlocksPerSm)
    fast_segments_kernel(const ist_segment *seg, int nseg,
                         imgstat_partial *partials) {
  pdl_trigger();
  const ist_segment S = seg[ist_segment_of(seg, nseg, blockIdx.x)];
  imgstat_partial p =
      fast_plane_block<Acc>(static_cast<const typename Acc::Sample *>(S.plane),
                            S.n, 0, blockIdx.x - S.first_block, S.nblocks);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = p;
}

/* One block per segment: the fold of its block partials by the one-image
 * fold's tree. Integer samples only (no shift to add back). */
__global__ void __launch_bounds__(FoldPolicy::kBlock)
    fold_segments_kernel(const ist_segment *seg,
                         const imgstat_partial *partials,
                         imgstat_partial *out) {
  pdl_wait();
  __shared__ imgstat_partial warp_roots[FoldPolicy::kBlock / 32];
  const ist_segment S = seg[blockIdx.x];
  imgstat_partial p;
  if constexpr (IMGSTAT_FOLD_INT)
    p = int_fold_block(partials + S.first_block, S.nblocks, 0);
  else
    p = ist_fo_fold_block_at<FoldPolicy::kBlock, FoldPolicy::kItems, false>(
        partials + S.first_block, S.nblocks, 0, warp_roots);
  if (threadIdx.x == 0)
    out[blockIdx.x] = p;
}

/* ---- interleaved (HWC) u8 / u16 images ----------------------------------
 * An image of C channels (2..4) stored pixel by pixel, reduced without
 * gathering it into planes first. u16 (this kernel; u8 has the faster one
 * below, hwc_unit_kernel, with the same partials; u16 too with
 * IMGSTAT_HWC16_UNIT). The loads are the fast kernel's: thread t of a tile
 * reads vectors t, t + 256, ... (kV of them), so every load of a warp is
 * coalesced. A tile holds a whole number of pixels, so the channel of sample
 * b of a thread's vector j is (j * 256 * kPerVec + b + r) % C: a constant
 * once the loops are unrolled, but for the thread's own offset
 * r = t * kPerVec % C (0 unless C = 3). Each thread therefore keeps its sums
 * and extremes by "relative" channel and maps them to channels at the end.
 * First positions: a thread remembers the tile in which a channel's running
 * min (max) last became strictly smaller (larger), and re-reads that tile's
 * kV vectors at the end. Integer partials merge exactly in any order, so
 * each channel's result equals the plane kernel's on the gathered plane. */
#ifndef IMGSTAT_HWC_BLOCKS_PER_SM /* overridable to time variants */
#define IMGSTAT_HWC_BLOCKS_PER_SM 2
#endif
/* The u8 kernel for C = 3 at its own blocks a multiprocessor: H200, 64 MP
 * RGB8 at 3 rather than 2 1.072 -> 1.060 x CUB's sum (80 registers, no
 * spill); RGBA8 at 3 lost (1.061 -> 1.252: 136 bytes of spill). */
#ifndef IMGSTAT_HWC3_BLOCKS_PER_SM
#define IMGSTAT_HWC3_BLOCKS_PER_SM 3
#endif
/* u16: the block's merge on integers, first positions once a block
 * (hwc_block_first) rather than every thread re-reading its tiles. */
#ifndef IMGSTAT_HWC_BLOCK_FIRST
#define IMGSTAT_HWC_BLOCK_FIRST 1
#endif
/* u16: the packed kernel (hwc16_pack_kernel: the samples two to a word,
 * 16x2 min / max by the word's channel pair) rather than sample by sample.
 * Its own shape: blocks a multiprocessor, groups of 3 (C = 3) or 4 vectors
 * a thread a tile, and tiles between flushes of its 32-bit sums (0: the
 * most that cannot overflow; a small number only to test the flush). */
/* The default, packed at 3 blocks a multiprocessor, measured best on the
 * H200 (RGB16 1.33 -> 1.21 x CUB, RGBA16 1.21 -> 1.07; docs/benchmarks.md). */
#ifndef IMGSTAT_HWC16_PACK
#define IMGSTAT_HWC16_PACK 1
#endif
#ifndef IMGSTAT_HWC16_BLOCKS_PER_SM
#define IMGSTAT_HWC16_BLOCKS_PER_SM 3
#endif
#ifndef IMGSTAT_HWC16_GROUPS
#define IMGSTAT_HWC16_GROUPS 1
#endif
#ifndef IMGSTAT_HWC16_FLUSH_TILES
#define IMGSTAT_HWC16_FLUSH_TILES 0
#endif
constexpr int kHwcBlocksPerSm = IMGSTAT_HWC_BLOCKS_PER_SM;
constexpr int hwc_u8_blocks_per_sm(int c) {
  return c == 3 ? IMGSTAT_HWC3_BLOCKS_PER_SM : kHwcBlocksPerSm;
}
constexpr int kHwc16BlocksPerSm =
    IMGSTAT_HWC16_PACK ? IMGSTAT_HWC16_BLOCKS_PER_SM : kHwcBlocksPerSm;
constexpr int kHwc16Groups = IMGSTAT_HWC16_PACK ? IMGSTAT_HWC16_GROUPS : 1;

template <typename Sample, int C> struct Hwc {
  static constexpr int kPerVec = 16 / (int)sizeof(Sample);
  /* vectors a thread, a tile */
  static constexpr int kV =
      (C == 3 ? 3 : 4) * (sizeof(Sample) == 2 ? kHwc16Groups : 1);
  static constexpr uint64_t kTileVecs = (uint64_t)FastPolicy::kBlock * kV;
  static constexpr int kMax = sizeof(Sample) == 1 ? 255 : 65535;
  static_assert((kTileVecs * kPerVec) % C == 0, "tiles of whole pixels");
  /* relative channel of sample b of a thread's vector j */
  static constexpr __device__ int rel(int j, int b) {
    return (int)(((uint64_t)j * FastPolicy::kBlock * kPerVec + b) % C);
  }
  /* samples of relative channel q in one of a thread's vectors j */
  static constexpr __device__ int in_vec(int j, int q) {
    int n = 0;
    for (int b = 0; b < kPerVec; ++b)
      n += rel(j, b) == q;
    return n;
  }
};

constexpr unsigned kNoTile = 0xffffffffu;

template <typename Sample, int C> struct HwcAcc {
  using H = Hwc<Sample, C>;
  using Sq =
      typename std::conditional<sizeof(Sample) == 1, unsigned, uint64_t>::type;
  uint64_t count[C], sum[C], sumsq[C];
  int vmin[C], vmax[C];
  unsigned min_tile[C], max_tile[C];

  __device__ HwcAcc() {
#pragma unroll
    for (int q = 0; q < C; ++q) {
      count[q] = sum[q] = sumsq[q] = 0;
      vmin[q] = H::kMax + 1;
      vmax[q] = -1;
      min_tile[q] = max_tile[q] = kNoTile;
    }
  }

  __device__ __forceinline__ bool saturated() const {
    bool sat = true;
#pragma unroll
    for (int q = 0; q < C; ++q)
      sat = sat && vmin[q] == 0 && vmax[q] == H::kMax;
    return sat;
  }

  /* The thread's valid vectors j < nvalid of tile `tile`. */
  __device__ __forceinline__ void add_tile(const uint4 (&v)[H::kV], int nvalid,
                                           unsigned tile) {
    unsigned s[C];
    Sq sq[C];
    int tmin[C], tmax[C];
#pragma unroll
    for (int q = 0; q < C; ++q) {
      s[q] = 0;
      sq[q] = 0;
      tmin[q] = H::kMax + 1;
      tmax[q] = -1;
    }
    if (FastPolicy::kSaturatedSkip && saturated()) {
#pragma unroll
      for (int j = 0; j < H::kV; ++j) {
        if (j < nvalid) {
          const unsigned w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
          for (int b = 0; b < H::kPerVec; ++b) {
            const unsigned x = sample_of<Sample>(w, b);
            s[H::rel(j, b)] += x;
            sq[H::rel(j, b)] += (Sq)x * x;
          }
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < H::kV; ++j) {
        if (j < nvalid) {
          const unsigned w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
          for (int b = 0; b < H::kPerVec; ++b) {
            const unsigned x = sample_of<Sample>(w, b);
            const int q = H::rel(j, b);
            s[q] += x; /* u8 <= 64 * 255, u16 <= 32 * 65535: no overflow */
            sq[q] += (Sq)x * x;
            tmin[q] = min(tmin[q], (int)x);
            tmax[q] = max(tmax[q], (int)x);
          }
        }
      }
#pragma unroll
      for (int q = 0; q < C; ++q) {
        if (tmin[q] < vmin[q]) {
          vmin[q] = tmin[q];
          min_tile[q] = tile;
        }
        if (tmax[q] > vmax[q]) {
          vmax[q] = tmax[q];
          max_tile[q] = tile;
        }
      }
    }
#pragma unroll
    for (int q = 0; q < C; ++q) {
      sum[q] += s[q];
      sumsq[q] += sq[q];
#pragma unroll
      for (int j = 0; j < H::kV; ++j)
        if (j < nvalid)
          count[q] += H::in_vec(j, q);
    }
  }
};

/* The first sample of relative channel q equal to `value` among the
 * thread's vectors of tile `tile` (those below nvec): its pixel index. */
template <typename Sample, int C>
__device__ uint64_t hwc_first(const uint4 *vec, uint64_t nvec, unsigned tile,
                              int q, int value) {
  using H = Hwc<Sample, C>;
  uint64_t found = kNone;
#pragma unroll
  for (int j = H::kV - 1; j >= 0; --j) { /* backwards: the last match wins */
    const uint64_t i = (uint64_t)tile * H::kTileVecs +
                       (uint64_t)j * FastPolicy::kBlock + threadIdx.x;
    if (i < nvec) {
      const uint4 v = __ldg(vec + i);
      const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int b = H::kPerVec - 1; b >= 0; --b)
        if (H::rel(j, b) == q && (int)sample_of<Sample>(w, b) == value)
          found = (i * H::kPerVec + b) / C;
    }
  }
  return found;
}

/* Block 0's share of the samples after the last whole vector (unit) from
 * tail0 (fewer than the block's threads): one a thread, as a partial of its
 * own channel, *channel (-1: none). */
template <typename Sample, int C>
__device__ imgstat_partial hwc_tail(const Sample *data, uint64_t tail0,
                                    uint64_t total, int *channel) {
  imgstat_partial tail = ist_partial_empty();
  *channel = -1;
  const uint64_t i = tail0 + threadIdx.x;
  if (blockIdx.x == 0 && i < total) {
    const unsigned x = data[i];
    *channel = (int)(i % C);
    tail.count = 1;
    tail.sum = x;
    tail.sumsq = (uint64_t)x * x;
    tail.min = tail.max = (double)x;
    tail.min_index = tail.max_index = i / C;
  }
  return tail;
}

/* The block's partial of each channel c from the threads' part[c] (and the
 * tail sample of channel tail_c), written to pass.out. */
template <int C>
__device__ void hwc_block_out(const imgstat_partial (&part)[C],
                              const imgstat_partial &tail, int tail_c,
                              const ist_pass &pass) {
  imgstat_partial *out = static_cast<imgstat_partial *>(pass.out);
#pragma unroll
  for (int c = 0; c < C; ++c) {
    imgstat_partial p = part[c];
    if (tail_c == c)
      ist_partial_combine<false>(&p, &tail);
    p = block_merge<false, FastPolicy::kBlock>(p);
    if (threadIdx.x == 0)
      out[(uint64_t)c * pass.out_stride + blockIdx.x] = p;
    __syncthreads(); /* the merge's shared slots are used again */
  }
}

/* The block's partials of an interleaved image (hwc_stats_kernel), merged
 * on integers alone and with the first positions found once a block: per
 * channel the count, the sums, and each extreme as one 64-bit key,
 * (value << 32 | tile) for the min and ((kMax - value) << 32 | tile) for the
 * max (a tail sample, after every tile, as tile kTailTile): the smallest
 * key gives the block's extreme value and the first tile holding it (tiles
 * are contiguous runs of pixels, and a thread's tile is that of its first
 * extreme). Then only the threads holding that key re-read their vectors
 * of that tile for the pixel, and the smallest pixel is the block's first
 * extreme: the partials' merge (smaller value, then smaller pixel) without
 * each thread re-reading its tiles, and C partials merged at once. */
template <typename Sample, int C>
__device__ void hwc_block_first(const HwcAcc<Sample, C> &acc, const uint4 *vec,
                                uint64_t nvec, int r,
                                const imgstat_partial &tail, int tail_c,
                                const ist_pass &pass) {
  using H = Hwc<Sample, C>;
  constexpr int kWarps = FastPolicy::kBlock / 32;
  constexpr unsigned long long kNoKey = ~0ull;
  constexpr unsigned kTailTile = 0xfffffffeu;
  const unsigned t = threadIdx.x;
  /* by channel c: relative channel q = (c - r) mod C */
  unsigned long long f[5][C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    f[0][c] = f[1][c] = f[2][c] = 0;
    f[3][c] = f[4][c] = kNoKey;
#pragma unroll
    for (int q = 0; q < C; ++q) {
      if ((q + r) % C != c)
        continue;
      f[0][c] = acc.count[q];
      f[1][c] = acc.sum[q];
      f[2][c] = acc.sumsq[q];
      if (acc.min_tile[q] != kNoTile)
        f[3][c] = (unsigned long long)acc.vmin[q] << 32 | acc.min_tile[q];
      if (acc.max_tile[q] != kNoTile)
        f[4][c] =
            (unsigned long long)(H::kMax - acc.vmax[q]) << 32 | acc.max_tile[q];
    }
    if (tail_c == c) {
      const unsigned long long x = tail.sum;
      f[0][c] += tail.count;
      f[1][c] += x;
      f[2][c] += tail.sumsq;
      f[3][c] = min(f[3][c], x << 32 | kTailTile);
      f[4][c] = min(f[4][c], (H::kMax - x) << 32 | kTailTile);
    }
  }
  __shared__ unsigned long long warp_f[5][C][kWarps];
  __shared__ unsigned long long best[2][C];
  unsigned long long g[5][C];
#pragma unroll
  for (int k = 0; k < 5; ++k)
#pragma unroll
    for (int c = 0; c < C; ++c)
      g[k][c] = f[k][c];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1)
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
      for (int k = 0; k < 3; ++k)
        g[k][c] += __shfl_xor_sync(0xffffffffu, g[k][c], m);
#pragma unroll
      for (int k = 3; k < 5; ++k)
        g[k][c] = min(g[k][c], __shfl_xor_sync(0xffffffffu, g[k][c], m));
    }
  if ((t & 31) == 0)
#pragma unroll
    for (int k = 0; k < 5; ++k)
#pragma unroll
      for (int c = 0; c < C; ++c)
        warp_f[k][c][t / 32] = g[k][c];
  __syncthreads();
  if (t < 2 * C) {
    const int c = (int)(t >> 1), e = (int)(t & 1);
    unsigned long long key = kNoKey;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      key = min(key, warp_f[3 + e][c][w]);
    best[e][c] = key;
  }
  __syncthreads();
  /* the pixel of each extreme the thread holds with the block's key */
  unsigned long long pix[2][C];
#pragma unroll
  for (int e = 0; e < 2; ++e)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      pix[e][c] = kNoKey;
      const unsigned long long key = best[e][c];
      if (key == kNoKey || f[3 + e][c] != key)
        continue;
      const unsigned tile = (unsigned)(key & 0xffffffffu);
      const int value = e == 0 ? (int)(key >> 32) : H::kMax - (int)(key >> 32);
      if (tile == kTailTile) {
        pix[e][c] = tail.min_index;
      } else {
        int q = 0;
#pragma unroll
        for (int k = 0; k < C; ++k)
          if ((k + r) % C == c)
            q = k;
        pix[e][c] = hwc_first<Sample, C>(vec, nvec, tile, q, value);
      }
    }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int c = 0; c < C; ++c)
        pix[e][c] = min(pix[e][c], __shfl_xor_sync(0xffffffffu, pix[e][c], m));
  __shared__ unsigned long long warp_pix[2][C][kWarps];
  if ((t & 31) == 0)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int c = 0; c < C; ++c)
        warp_pix[e][c][t / 32] = pix[e][c];
  __syncthreads();
  if (t < C) {
    imgstat_partial p = ist_partial_empty();
    unsigned long long at[2] = {kNoKey, kNoKey};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      p.count += warp_f[0][t][w];
      p.sum += warp_f[1][t][w];
      p.sumsq += warp_f[2][t][w];
      at[0] = min(at[0], warp_pix[0][t][w]);
      at[1] = min(at[1], warp_pix[1][t][w]);
    }
    if (best[0][t] != kNoKey && at[0] != kNoKey) {
      p.min = (double)(int)(best[0][t] >> 32);
      p.min_index = at[0];
    }
    if (best[1][t] != kNoKey && at[1] != kNoKey) {
      p.max = (double)(H::kMax - (int)(best[1][t] >> 32));
      p.max_index = at[1];
    }
    static_cast<imgstat_partial *>(
        pass.out)[(uint64_t)t * pass.out_stride + blockIdx.x] = p;
  }
}

template <typename Sample, int C>
__global__ void __launch_bounds__(FastPolicy::kBlock, kHwcBlocksPerSm)
    hwc_stats_kernel(ist_pass pass) {
  pdl_trigger();
  using H = Hwc<Sample, C>;
  const unsigned t = threadIdx.x;
  const Sample *data = static_cast<const Sample *>(pass.in);
  const uint64_t total = pass.n * C; /* samples */
  const uint64_t nvec = total / H::kPerVec;
  const uint4 *vec = reinterpret_cast<const uint4 *>(data);
  const int r = (int)(((uint64_t)t * H::kPerVec) % C);
  HwcAcc<Sample, C> acc;

  const uint64_t full = nvec / H::kTileVecs;
  uint64_t tile = blockIdx.x;
  for (; tile < full; tile += gridDim.x) {
    uint4 v[H::kV];
#pragma unroll
    for (int j = 0; j < H::kV; ++j)
      v[j] = __ldg(vec + tile * H::kTileVecs +
                   (uint64_t)j * FastPolicy::kBlock + t);
    acc.add_tile(v, H::kV, (unsigned)tile);
  }
  if (tile == full && full * H::kTileVecs < nvec) {
    uint4 v[H::kV];
    int nvalid = 0;
#pragma unroll
    for (int j = 0; j < H::kV; ++j) {
      uint64_t i = tile * H::kTileVecs + (uint64_t)j * FastPolicy::kBlock + t;
      if (i < nvec) {
        v[j] = __ldg(vec + i);
        nvalid = j + 1;
      } else {
        v[j] = make_uint4(0, 0, 0, 0);
      }
    }
    if (nvalid > 0)
      acc.add_tile(v, nvalid, (unsigned)tile);
  }
  int tail_c;
  const imgstat_partial tail =
      hwc_tail<Sample, C>(data, nvec * H::kPerVec, total, &tail_c);
  if constexpr (IMGSTAT_HWC_BLOCK_FIRST) {
    hwc_block_first<Sample, C>(acc, vec, nvec, r, tail, tail_c, pass);
  } else {
    /* The thread's partial of each relative channel, then channel by channel
     * the block's. */
    imgstat_partial part[C];
#pragma unroll
    for (int q = 0; q < C; ++q) {
      imgstat_partial p = ist_partial_empty();
      p.count = acc.count[q];
      p.sum = acc.sum[q];
      p.sumsq = acc.sumsq[q];
      if (acc.min_tile[q] != kNoTile) {
        p.min = (double)acc.vmin[q];
        p.min_index =
            hwc_first<Sample, C>(vec, nvec, acc.min_tile[q], q, acc.vmin[q]);
      }
      if (acc.max_tile[q] != kNoTile) {
        p.max = (double)acc.vmax[q];
        p.max_index =
            hwc_first<Sample, C>(vec, nvec, acc.max_tile[q], q, acc.vmax[q]);
      }
      part[q] = p;
    }
    imgstat_partial real[C]; /* by channel: relative channel q is (q + r) % C */
#pragma unroll
    for (int c = 0; c < C; ++c) {
      real[c] = ist_partial_empty();
#pragma unroll
      for (int q = 0; q < C; ++q)
        if ((q + r) % C == c)
          real[c] = part[q];
    }
    hwc_block_out<C>(real, tail, tail_c, pass);
  }
}

/* u16, packed (IMGSTAT_HWC16_PACK): the tiles, loads and first positions of
 * hwc_stats_kernel, but the samples reduced two to a word as the planar u16
 * kernel reduces them. A word holds a pixel-order pair of samples whose
 * relative channels are (k, k + 1 mod C), k its "class": with C = 3 the
 * words of a thread's vectors cycle through the classes (0, 1), (2, 0),
 * (1, 2); with C = 4, (0, 1) and (2, 3); with C = 2, (0, 1). A word's class
 * is a constant once the loops are unrolled (relative to the thread's r, as
 * for hwc_stats_kernel). Per word: its low and high halves into 32-bit
 * sums and exact 64-bit sums of squares of their channels, and one 16x2
 * min / max into its class's packed extremes of the tile. Per tile, each
 * class's packed extremes into its running ones; a half whose running min
 * (max) becomes strictly smaller (larger) notes the tile (rarely, after the
 * first tiles: one branch over all of them). At the end, each channel's
 * extreme is the better of its two halves (value, then first tile), and
 * hwc_block_first finds the block's first positions as for the other u16
 * kernel: the same partials.
 *
 * Exactness: a thread's 32-bit sum of a channel takes at most kMaxPerTile
 * samples (<= 65535 each) a tile and is flushed into 64 bits every
 * kFlushTiles of its tiles, kFlushTiles * kMaxPerTile * 65535 < 2^32;
 * squares go straight into 64 bits (as the CPU's sums, < 2^64 for the
 * images the library takes). The running extremes start at the halves'
 * bounds (min 65535, max 0); a half that never improves on them has only
 * that value, so its first tile is the thread's first (every valid vector
 * holds every class). */
template <int C> struct HwcPack16 {
  using H = Hwc<uint16_t, C>;
  /* the class of word i of a thread's tile (vector i / 4): the relative
   * channel of its low half */
  static constexpr __device__ int cls(int i) {
    return H::rel(i / 4, 2 * (i % 4));
  }
  static constexpr __device__ bool used(int k) {
    for (int i = 0; i < 4; ++i) /* vector 0 holds every class */
      if (cls(i) == k)
        return true;
    return false;
  }
  static constexpr __device__ bool every_vector_every_class() {
    for (int j = 0; j < H::kV; ++j)
      for (int k = 0; k < C; ++k) {
        bool in = false;
        for (int i = 4 * j; i < 4 * j + 4; ++i)
          in = in || cls(i) == k;
        if (in != used(k))
          return false;
      }
    return true;
  }
  static_assert(every_vector_every_class(), "a vector holds every class");
  /* samples of relative channel q in a thread's first `nv` vectors */
  static constexpr __device__ uint64_t per_vectors(int q, int nv) {
    uint64_t n = 0;
    for (int j = 0; j < nv; ++j)
      n += (uint64_t)H::in_vec(j, q);
    return n;
  }
  static constexpr __device__ uint64_t max_per_tile() {
    uint64_t m = 0;
    for (int q = 0; q < C; ++q)
      m = per_vectors(q, H::kV) > m ? per_vectors(q, H::kV) : m;
    return m;
  }
  static constexpr uint64_t kMaxPerTile = max_per_tile();
  static constexpr uint64_t
      kFlushTiles = IMGSTAT_HWC16_FLUSH_TILES > 0
                        ? (uint64_t)IMGSTAT_HWC16_FLUSH_TILES
                        : 0xffffffffull / (kMaxPerTile * 65535);
  static_assert(kFlushTiles >= 1 &&
                    kFlushTiles * kMaxPerTile * 65535 <= 0xffffffffull,
                "32-bit sums flushed before they can overflow");

  unsigned s[C];             /* by relative channel, since the last flush */
  uint64_t sum[C], sumsq[C]; /* by relative channel */
  unsigned mn[C], mx[C];     /* by class: running packed min / max */
  /* by class: the tile in which its low (high) half's running min (max)
   * last became strictly smaller (larger); kNoTile: never */
  unsigned min_lo[C], min_hi[C], max_lo[C], max_hi[C];

  __device__ HwcPack16() {
#pragma unroll
    for (int q = 0; q < C; ++q) {
      s[q] = 0;
      sum[q] = sumsq[q] = 0;
      mn[q] = 0xffffffffu;
      mx[q] = 0;
      min_lo[q] = min_hi[q] = max_lo[q] = max_hi[q] = kNoTile;
    }
  }

  __device__ __forceinline__ void flush() {
#pragma unroll
    for (int q = 0; q < C; ++q) {
      sum[q] += s[q];
      s[q] = 0;
    }
  }

  __device__ __forceinline__ void add_sums(unsigned w, int k) {
    const unsigned lo = w & 0xffffu, hi = w >> 16;
    s[k] += lo;
    s[(k + 1) % C] += hi;
    sumsq[k] += (uint64_t)lo * lo;
    sumsq[(k + 1) % C] += (uint64_t)hi * hi;
  }

  /* The thread's valid vectors j < nvalid (nvalid >= 1) of tile `tile`. */
  __device__ __forceinline__ void add_tile(const uint4 (&v)[H::kV], int nvalid,
                                           unsigned tile) {
    bool sat = FastPolicy::kSaturatedSkip;
#pragma unroll
    for (int k = 0; k < C; ++k)
      if (used(k))
        sat = sat && mn[k] == 0 && mx[k] == 0xffffffffu;
    if (sat) { /* no later sample can change the extremes */
#pragma unroll
      for (int j = 0; j < H::kV; ++j) {
        if (j < nvalid) {
          const unsigned w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
          for (int b = 0; b < 4; ++b)
            add_sums(w[b], cls(4 * j + b));
        }
      }
      return;
    }
    unsigned tmn[C], tmx[C]; /* by class: the tile's packed min / max */
#pragma unroll
    for (int k = 0; k < C; ++k) { /* (set by the first word of each) */
      tmn[k] = 0xffffffffu;
      tmx[k] = 0;
    }
#pragma unroll
    for (int j = 0; j < H::kV; ++j) {
      if (j < nvalid) { /* vector 0 always: it starts every class */
        const unsigned w[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int i = 4 * j + b, k = cls(i);
          add_sums(w[b], k);
          bool first = true; /* the tile's first word of class k */
#pragma unroll
          for (int e = 0; e < i; ++e)
            first = first && cls(e) != k;
          if (first) {
            tmn[k] = w[b];
            tmx[k] = w[b];
          } else {
            tmn[k] = min_u16x2(tmn[k], w[b]);
            tmx[k] = max_u16x2(tmx[k], w[b]);
          }
        }
      }
    }
    unsigned nmn[C], nmx[C], any = 0;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      if (!used(k))
        continue;
      nmn[k] = min_u16x2(mn[k], tmn[k]);
      nmx[k] = max_u16x2(mx[k], tmx[k]);
      any |= (nmn[k] ^ mn[k]) | (nmx[k] ^ mx[k]);
    }
    if (any) { /* some half strictly better: note the tile */
#pragma unroll
      for (int k = 0; k < C; ++k) {
        if (!used(k))
          continue;
        const unsigned dmn = nmn[k] ^ mn[k], dmx = nmx[k] ^ mx[k];
        if (dmn & 0xffffu)
          min_lo[k] = tile;
        if (dmn >> 16)
          min_hi[k] = tile;
        if (dmx & 0xffffu)
          max_lo[k] = tile;
        if (dmx >> 16)
          max_hi[k] = tile;
        mn[k] = nmn[k];
        mx[k] = nmx[k];
      }
    }
  }

  /* The thread's reduction as hwc_stats_kernel's accumulator holds it (by
   * relative channel), for hwc_block_first: after `full` whole tiles and
   * `nvalid` vectors of the partial one (after a flush); `first` the tile
   * of its first vector when it had any. */
  __device__ HwcAcc<uint16_t, C> result(uint64_t full, int nvalid,
                                        bool any_vector, unsigned first) const {
    HwcAcc<uint16_t, C> a;
#pragma unroll
    for (int q = 0; q < C; ++q) {
      uint64_t part = 0;
#pragma unroll
      for (int j = 1; j <= H::kV; ++j)
        if (j == nvalid)
          part = per_vectors(q, j);
      a.count[q] = full * per_vectors(q, H::kV) + part;
      a.sum[q] = sum[q];
      a.sumsq[q] = sumsq[q];
    }
    if (!any_vector)
      return a;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      if (!used(k))
        continue;
      const int hi = (k + 1) % C;
      offer_min(a, k, (int)(mn[k] & 0xffffu),
                min_lo[k] == kNoTile ? first : min_lo[k]);
      offer_min(a, hi, (int)(mn[k] >> 16),
                min_hi[k] == kNoTile ? first : min_hi[k]);
      offer_max(a, k, (int)(mx[k] & 0xffffu),
                max_lo[k] == kNoTile ? first : max_lo[k]);
      offer_max(a, hi, (int)(mx[k] >> 16),
                max_hi[k] == kNoTile ? first : max_hi[k]);
    }
    return a;
  }
  /* a half's (value, first tile) into its channel's: smaller value, then
   * earlier tile (the halves' tiles are those of their first extremes) */
  static __device__ __forceinline__ void
  offer_min(HwcAcc<uint16_t, C> &a, int q, int value, unsigned tile) {
    if (value < a.vmin[q] || (value == a.vmin[q] && tile < a.min_tile[q])) {
      a.vmin[q] = value;
      a.min_tile[q] = tile;
    }
  }
  static __device__ __forceinline__ void
  offer_max(HwcAcc<uint16_t, C> &a, int q, int value, unsigned tile) {
    if (value > a.vmax[q] || (value == a.vmax[q] && tile < a.max_tile[q])) {
      a.vmax[q] = value;
      a.max_tile[q] = tile;
    }
  }
};

template <int C>
__global__ void __launch_bounds__(FastPolicy::kBlock, kHwc16BlocksPerSm)
    hwc16_pack_kernel(ist_pass pass) {
  pdl_trigger();
  using H = Hwc<uint16_t, C>;
  using A = HwcPack16<C>;
  const unsigned t = threadIdx.x;
  const uint16_t *data = static_cast<const uint16_t *>(pass.in);
  const uint64_t total = pass.n * C; /* samples */
  const uint64_t nvec = total / H::kPerVec;
  const uint4 *vec = reinterpret_cast<const uint4 *>(data);
  const int r = (int)(((uint64_t)t * H::kPerVec) % C);
  A acc;

  const uint64_t full = nvec / H::kTileVecs;
  uint64_t tile = blockIdx.x;
  while (tile < full) { /* at most kFlushTiles tiles between flushes */
    const uint64_t stop = min(full, tile + A::kFlushTiles * gridDim.x);
    for (; tile < stop; tile += gridDim.x) {
      uint4 v[H::kV];
#pragma unroll
      for (int j = 0; j < H::kV; ++j)
        v[j] = __ldg(vec + tile * H::kTileVecs +
                     (uint64_t)j * FastPolicy::kBlock + t);
      acc.add_tile(v, H::kV, (unsigned)tile);
    }
    acc.flush();
  }
  int nvalid = 0;
  if (tile == full && full * H::kTileVecs < nvec) {
    uint4 v[H::kV];
#pragma unroll
    for (int j = 0; j < H::kV; ++j) {
      uint64_t i = tile * H::kTileVecs + (uint64_t)j * FastPolicy::kBlock + t;
      if (i < nvec) {
        v[j] = __ldg(vec + i);
        nvalid = j + 1;
      } else {
        v[j] = make_uint4(0, 0, 0, 0);
      }
    }
    if (nvalid > 0) {
      acc.add_tile(v, nvalid, (unsigned)tile);
      acc.flush();
    }
  }
  const uint64_t whole =
      blockIdx.x < full ? (full - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const bool any_vector = (uint64_t)blockIdx.x * H::kTileVecs + t < nvec;
  const HwcAcc<uint16_t, C> a =
      acc.result(whole, nvalid, any_vector, (unsigned)blockIdx.x);
  int tail_c;
  const imgstat_partial tail =
      hwc_tail<uint16_t, C>(data, nvec * H::kPerVec, total, &tail_c);
  hwc_block_first<uint16_t, C>(a, vec, nvec, r, tail, tail_c, pass);
}

/* u8 (hwc_unit_kernel<WordU8, C>): the samples of a thread's unit (C
 * vectors in a row: 16 pixels) are first split into C channel words per 4
 * pixels by byte permutes (2, 2 and 2 PRMTs a word for C = 2, 3, 4), and
 * those words reduced as the plane kernel reduces its own: __dp4a sums, 16x2
 * min / max of the words and the words shifted up a byte (the lanes' high
 * bytes, IMGSTAT_U8_HIGH_EXTREMES). A tile is kU units a thread, units t,
 * t + 256, ...; a channel's first positions come from the unit in which its
 * running min (max) last became strictly smaller (larger), found from the
 * units' lanes only in a tile that betters it (IMGSTAT_FAST_LAZY_FIRST),
 * re-read and split at the end. The C loads of a unit are 48 or 64 bytes
 * apart across a warp (not 16 as CUB's); loads coalesced would save 1-2 %
 * at 64 MP, the split 1 % (timing diagnostics, docs/benchmarks.md), but a
 * thread's vectors would then no longer be whole pixels in a row, and the
 * first positions would need the vector of each extreme. u16
 * (hwc_unit_kernel<WordU16, C>, IMGSTAT_HWC16_UNIT): the same with units of 8
 * pixels, split into C channel words per 2 pixels (1 PRMT a word for every C),
 * reduced as the plane kernel reduces u16 words: 32-bit sums flushed every
 * tile, 64-bit sums of squares, 16x2 min / max. */
#ifndef IMGSTAT_HWC_UNITS /* units a thread, a tile                            \
                             (bench/gpu/hwc_variants.sh) */
#define IMGSTAT_HWC_UNITS 2
#endif
/* u8 with four channels alone (H200, 64 MP, 5bd97c0: 4 units 1.051 x CUB's
 * sum against 1.062 at 2, three channels 1.104 against 1.061; with the lazy
 * decode, f5dc1c5 / 9e30dff: 1.046 / 1.047 against 1.039 / 1.053) */
#ifndef IMGSTAT_HWC4_UNITS
#define IMGSTAT_HWC4_UNITS IMGSTAT_HWC_UNITS
#endif
constexpr int hwc_units(int sample_size, int c) {
  return sample_size == 1 && c == 4 ? IMGSTAT_HWC4_UNITS : IMGSTAT_HWC_UNITS;
}
/* u16 interleaved by units (hwc_unit_kernel<WordU16, C>) rather than the
 * packed kernel (IMGSTAT_HWC16_PACK); for C = 3 its own blocks a
 * multiprocessor, C = 2 and 4 at IMGSTAT_HWC_BLOCKS_PER_SM as u8's. ptxas
 * (sm_90): C = 3 at 3 80 registers, no spill (94 at 2); C = 4 at 2 124, no
 * spill (at 3 208 bytes of spill); C = 2 69 at either. */
/* 0: the packed kernel for every C; 1: by units for every C; 3 (the
 * default): by units for three channels only. H200, 64 MP: RGB16 by units
 * 1.111 x CUB's sum against 1.206 packed; RGBA16 1.132 against 1.069. */
#ifndef IMGSTAT_HWC16_UNIT
#define IMGSTAT_HWC16_UNIT 3
#endif
#ifndef IMGSTAT_HWC16_UNIT_BLOCKS_PER_SM
#define IMGSTAT_HWC16_UNIT_BLOCKS_PER_SM 3
#endif
constexpr bool hwc16_by_units(int c) {
  return IMGSTAT_HWC16_UNIT == 1 || (IMGSTAT_HWC16_UNIT == 3 && c == 3);
}
constexpr int hwc_unit_blocks_per_sm(int sample_size, int c) {
  return sample_size == 1 ? hwc_u8_blocks_per_sm(c)
         : c == 3         ? IMGSTAT_HWC16_UNIT_BLOCKS_PER_SM
                          : kHwcBlocksPerSm;
}

/* C words of whole pixels (u8: 4 pixels, u16: 2) as C channel words, each
 * its channel's samples in pixel order. */
template <typename Sample, int C>
__device__ __forceinline__ void hwc_split_group(const unsigned *w,
                                                unsigned (&x)[C]) {
  if constexpr (sizeof(Sample) == 2) { /* the low half of a word first */
    if constexpr (C == 2) {
      x[0] = __byte_perm(w[0], w[1], 0x5410);
      x[1] = __byte_perm(w[0], w[1], 0x7632);
    } else if constexpr (C == 3) {
      x[0] = __byte_perm(w[0], w[1], 0x7610);
      x[1] = __byte_perm(w[0], w[2], 0x5432);
      x[2] = __byte_perm(w[1], w[2], 0x7610);
    } else {
      x[0] = __byte_perm(w[0], w[2], 0x5410);
      x[1] = __byte_perm(w[0], w[2], 0x7632);
      x[2] = __byte_perm(w[1], w[3], 0x5410);
      x[3] = __byte_perm(w[1], w[3], 0x7632);
    }
  } else if constexpr (C == 2) {
    x[0] = __byte_perm(w[0], w[1], 0x6420);
    x[1] = __byte_perm(w[0], w[1], 0x7531);
  } else if constexpr (C == 3) {
    x[0] = __byte_perm(__byte_perm(w[0], w[1], 0x0630), w[2], 0x5210);
    x[1] = __byte_perm(__byte_perm(w[0], w[1], 0x0741), w[2], 0x6210);
    x[2] = __byte_perm(__byte_perm(w[0], w[1], 0x0052), w[2], 0x7410);
  } else {
    const unsigned t0 = __byte_perm(w[0], w[1], 0x5140);
    const unsigned t1 = __byte_perm(w[2], w[3], 0x5140);
    const unsigned t2 = __byte_perm(w[0], w[1], 0x7362);
    const unsigned t3 = __byte_perm(w[2], w[3], 0x7362);
    x[0] = __byte_perm(t0, t1, 0x5410);
    x[1] = __byte_perm(t0, t1, 0x7632);
    x[2] = __byte_perm(t2, t3, 0x5410);
    x[3] = __byte_perm(t2, t3, 0x7632);
  }
}

/* A unit (C vectors: 16 pixels of u8, 8 of u16) as C channel vectors: x[c]
 * holds channel c's samples in pixel order. */
template <typename Sample, int C>
__device__ __forceinline__ void hwc_split_unit(const uint4 (&v)[C],
                                               uint4 (&x)[C]) {
  unsigned w[4 * C];
#pragma unroll
  for (int k = 0; k < C; ++k) {
    w[4 * k] = v[k].x;
    w[4 * k + 1] = v[k].y;
    w[4 * k + 2] = v[k].z;
    w[4 * k + 3] = v[k].w;
  }
  unsigned g[4][C];
#pragma unroll
  for (int q = 0; q < 4; ++q)
    hwc_split_group<Sample, C>(w + q * C, g[q]);
#pragma unroll
  for (int c = 0; c < C; ++c)
    x[c] = make_uint4(g[0][c], g[1][c], g[2][c], g[3][c]);
}

template <int C>
__device__ __forceinline__ void hwc_load_unit(const uint4 *vec, uint64_t unit,
                                              uint4 (&v)[C]) {
#pragma unroll
  for (int k = 0; k < C; ++k)
    v[k] = __ldg(vec + unit * C + k);
}

/* A thread's reduction by units (Word: WordU8, WordU16). */
template <typename Word, int C> struct HwcUnit {
  using Sample = typename Word::Sample;
  static constexpr int kMax = Word::kMax;
  static constexpr int kHwcUnits = hwc_units((int)sizeof(Sample), C);
  /* a tile's 32-bit sums: at most kHwcUnits * 16 * 255 (u8) or
   * kHwcUnits * 8 * 65535 (u16) a channel */
  static_assert((uint64_t)kHwcUnits * Word::kPerVector * kMax <= 0xffffffffu,
                "a tile's sums fit in 32 bits");
  uint64_t count = 0, sum[C], sumsq[C];
  int vmin[C], vmax[C];
  uint64_t min_unit[C], max_unit[C];

  __device__ HwcUnit() {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      sum[c] = sumsq[c] = 0;
      vmin[c] = kMax + 1;
      vmax[c] = -1;
      min_unit[c] = max_unit[c] = kNone;
    }
  }

  /* The thread's first unit k < nvalid of tile `tile` whose extreme h[k]
   * is `value`, as a unit number of the image. */
  static __device__ __forceinline__ uint64_t
  first_unit(const int (&h)[kHwcUnits], int value, int nvalid, uint64_t tile) {
    int first = 0;
#pragma unroll
    for (int k = kHwcUnits - 1; k >= 0; --k)
      if (k < nvalid && h[k] == value)
        first = k;
    return tile * FastPolicy::kBlock * kHwcUnits +
           (uint64_t)first * FastPolicy::kBlock + threadIdx.x;
  }

  /* The thread's valid units k < nvalid of tile `tile`. */
  __device__ __forceinline__ void add_tile(const uint4 (&v)[kHwcUnits][C],
                                           int nvalid, uint64_t tile) {
    bool sat = FastPolicy::kSaturatedSkip;
#pragma unroll
    for (int c = 0; c < C; ++c)
      sat = sat && vmin[c] == 0 && vmax[c] == kMax;
    unsigned s[C], mn[C][kHwcUnits], mx[C][kHwcUnits];
    typename Word::SumSq q[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      s[c] = q[c] = 0;
#pragma unroll
      for (int k = 0; k < kHwcUnits; ++k) {
        mn[c][k] = 0xffffffffu;
        mx[c][k] = 0;
      }
    }
#pragma unroll
    for (int k = 0; k < kHwcUnits; ++k) {
      if (k < nvalid) {
        uint4 x[C];
        if constexpr (IMGSTAT_HWC_NOSPLIT_DIAG) {
#pragma unroll
          for (int c = 0; c < C; ++c)
            x[c] = v[k][c];
        } else {
          hwc_split_unit<Sample, C>(v[k], x);
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const unsigned w[4] = {x[c].x, x[c].y, x[c].z, x[c].w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            Word::sums(w[j], s[c], q[c]); /* u8 q: <= 32 * 65025 a tile */
            if (!sat)
              Word::extremes(w[j], mn[c][k], mx[c][k]);
          }
        }
      }
    }
    count += Word::kPerVector * nvalid; /* pixels a unit */
#pragma unroll
    for (int c = 0; c < C; ++c) {
      sum[c] += s[c];
      sumsq[c] += q[c];
    }
    if (sat)
      return;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      int hmin[kHwcUnits], hmax[kHwcUnits];
      if constexpr (IMGSTAT_FAST_LAZY_FIRST == 2 ||
                    (IMGSTAT_FAST_LAZY_FIRST == 1 && sizeof(Sample) == 1)) {
        /* the tile's extremes from its units' lanes; a unit's own only
         * when the tile betters the running one */
        unsigned lmn = mn[c][0], lmx = mx[c][0];
#pragma unroll
        for (int k = 1; k < kHwcUnits; ++k)
          if (k < nvalid) {
            lmn = min_u16x2(lmn, mn[c][k]);
            lmx = max_u16x2(lmx, mx[c][k]);
          }
        const int tmin = (int)Word::lane_min(lmn);
        const int tmax = (int)Word::lane_max(lmx);
        if (tmin < vmin[c]) {
#pragma unroll
          for (int k = 0; k < kHwcUnits; ++k)
            hmin[k] = (int)Word::lane_min(mn[c][k]);
          vmin[c] = tmin;
          min_unit[c] = first_unit(hmin, tmin, nvalid, tile);
        }
        if (tmax > vmax[c]) {
#pragma unroll
          for (int k = 0; k < kHwcUnits; ++k)
            hmax[k] = (int)Word::lane_max(mx[c][k]);
          vmax[c] = tmax;
          max_unit[c] = first_unit(hmax, tmax, nvalid, tile);
        }
        continue;
      }
      int tmin = kMax + 1, tmax = -1;
#pragma unroll
      for (int k = 0; k < kHwcUnits; ++k) {
        hmin[k] = (int)Word::lane_min(mn[c][k]);
        hmax[k] = (int)Word::lane_max(mx[c][k]);
        if (k < nvalid) {
          tmin = min(tmin, hmin[k]);
          tmax = max(tmax, hmax[k]);
        }
      }
      if (tmin < vmin[c]) {
        vmin[c] = tmin;
        min_unit[c] = first_unit(hmin, tmin, nvalid, tile);
      }
      if (tmax > vmax[c]) {
        vmax[c] = tmax;
        max_unit[c] = first_unit(hmax, tmax, nvalid, tile);
      }
    }
  }
};

/* The pixel index of the first sample of channel c equal to value in unit
 * `unit`. */
template <typename Word, int C>
__device__ uint64_t hwc_unit_first(const uint4 *vec, uint64_t unit, int c,
                                   int value) {
  using Sample = typename Word::Sample;
  uint4 v[C], x[C];
  hwc_load_unit<C>(vec, unit, v);
  hwc_split_unit<Sample, C>(v, x);
  uint4 mine = x[0];
#pragma unroll
  for (int k = 1; k < C; ++k)
    if (k == c)
      mine = x[k];
  Found<Sample> f = find_in_vector<Sample>(mine, value);
  return f.j >= 0 ? unit * Word::kPerVector + (uint64_t)f.j : kNone;
}

template <typename Word, int C>
__global__ void
__launch_bounds__(FastPolicy::kBlock,
                  hwc_unit_blocks_per_sm((int)sizeof(typename Word::Sample), C))
    hwc_unit_kernel(ist_pass pass) {
  pdl_trigger();
  using Sample = typename Word::Sample;
  constexpr int kMax = Word::kMax;
  constexpr uint64_t kPix = Word::kPerVector; /* pixels a unit */
  const unsigned t = threadIdx.x;
  const Sample *data = static_cast<const Sample *>(pass.in);
  const uint64_t total = pass.n * C; /* samples */
  const uint64_t units = total / (kPix * C);
  const uint4 *vec = reinterpret_cast<const uint4 *>(data);
  constexpr int kHwcUnits = HwcUnit<Word, C>::kHwcUnits;
  constexpr uint64_t kTileUnits = (uint64_t)FastPolicy::kBlock * kHwcUnits;
  HwcUnit<Word, C> acc;

  const uint64_t full = units / kTileUnits;
  uint64_t tile = blockIdx.x;
  for (; tile < full; tile += gridDim.x) {
    uint4 v[kHwcUnits][C];
    if constexpr (IMGSTAT_HWC_COALESCED_DIAG) {
      /* timing only (wrong channels and first positions): a warp's loads
       * of a tile's vectors in a row, vector (k C + j) 256 + t */
#pragma unroll
      for (int k = 0; k < kHwcUnits; ++k)
#pragma unroll
        for (int j = 0; j < C; ++j)
          v[k][j] = __ldg(vec + tile * kTileUnits * C +
                          (uint64_t)(k * C + j) * FastPolicy::kBlock + t);
    } else {
#pragma unroll
      for (int k = 0; k < kHwcUnits; ++k)
        hwc_load_unit<C>(
            vec, tile * kTileUnits + (uint64_t)k * FastPolicy::kBlock + t,
            v[k]);
    }
    acc.add_tile(v, kHwcUnits, tile);
  }
  if (tile == full && full * kTileUnits < units) {
    uint4 v[kHwcUnits][C];
    int nvalid = 0;
#pragma unroll
    for (int k = 0; k < kHwcUnits; ++k) {
      const uint64_t u =
          tile * kTileUnits + (uint64_t)k * FastPolicy::kBlock + t;
      if (u < units) {
        hwc_load_unit<C>(vec, u, v[k]);
        nvalid = k + 1;
      } else {
#pragma unroll
        for (int j = 0; j < C; ++j)
          v[k][j] = make_uint4(0, 0, 0, 0);
      }
    }
    if (nvalid > 0)
      acc.add_tile(v, nvalid, tile);
  }
  /* The block's merge, on integers alone (3 imgstat_partial merges in a
   * row were 2-3 us more at the kernel's end than the planar kernel's one):
   * per channel the count, the sums, and each extreme as one 64-bit key,
   * (value << 48 | order) for the min and ((kMax - value) << 48 | order)
   * for the max, the order being a number that orders the extremes as their
   * pixels (the unit of a thread's first extreme; units + pixel index for a
   * tail sample, which comes after every unit): the smallest key is the
   * block's first extreme. Warp shuffles, then one slot a warp; then one
   * thread for each channel's min and max re-reads that one unit for the
   * pixel (not every thread its own: 6 rounds to memory a thread at the
   * end, a tenth more bytes read). */
  constexpr int kWarps = FastPolicy::kBlock / 32;
  constexpr unsigned long long kNoKey = ~0ull;
  int tail_c;
  const imgstat_partial tail =
      hwc_tail<Sample, C>(data, units * kPix * C, total, &tail_c);
  unsigned long long cnt[C], sum[C], sq[C], kmin[C], kmax[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    cnt[c] = acc.count;
    sum[c] = acc.sum[c];
    sq[c] = acc.sumsq[c];
    kmin[c] = acc.min_unit[c] != kNone
                  ? (unsigned long long)acc.vmin[c] << 48 | acc.min_unit[c]
                  : kNoKey;
    kmax[c] =
        acc.max_unit[c] != kNone
            ? (unsigned long long)(kMax - acc.vmax[c]) << 48 | acc.max_unit[c]
            : kNoKey;
    if (tail_c == c) { /* its one sample: sum x, pixel min_index */
      const unsigned long long x = tail.sum, order = units + tail.min_index;
      cnt[c] += tail.count;
      sum[c] += x;
      sq[c] += tail.sumsq;
      kmin[c] = min(kmin[c], x << 48 | order);
      kmax[c] = min(kmax[c], (kMax - x) << 48 | order);
    }
  }
#pragma unroll
  for (int level = 0; level < 5; ++level) {
    const int m = 16 >> level;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      cnt[c] += __shfl_xor_sync(0xffffffffu, cnt[c], m);
      sum[c] += __shfl_xor_sync(0xffffffffu, sum[c], m);
      sq[c] += __shfl_xor_sync(0xffffffffu, sq[c], m);
      kmin[c] = min(kmin[c], __shfl_xor_sync(0xffffffffu, kmin[c], m));
      kmax[c] = min(kmax[c], __shfl_xor_sync(0xffffffffu, kmax[c], m));
    }
  }
  __shared__ unsigned long long warp_f[5][C][kWarps];
  if ((t & 31) == 0)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      warp_f[0][c][t / 32] = cnt[c];
      warp_f[1][c][t / 32] = sum[c];
      warp_f[2][c][t / 32] = sq[c];
      warp_f[3][c][t / 32] = kmin[c];
      warp_f[4][c][t / 32] = kmax[c];
    }
  __syncthreads();
  /* the block's first min (e = 0) and max (e = 1) of each channel: value
   * and pixel (kNone: none), one thread each, in parallel */
  __shared__ int ext_value[2][C];
  __shared__ uint64_t ext_index[2][C];
  if (t < 2 * C) {
    const int c = (int)(t / 2), e = (int)(t & 1);
    unsigned long long key = kNoKey;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      key = min(key, warp_f[3 + e][c][w]);
    ext_index[e][c] = kNone;
    if (key != kNoKey) {
      const int value = e == 0 ? (int)(key >> 48) : kMax - (int)(key >> 48);
      const uint64_t at = key & ((1ull << 48) - 1);
      ext_value[e][c] = value;
      ext_index[e][c] =
          at < units ? hwc_unit_first<Word, C>(vec, at, c, value) : at - units;
    }
  }
  __syncthreads();
  if (t < C) {
    imgstat_partial p = ist_partial_empty();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      p.count += warp_f[0][t][w];
      p.sum += warp_f[1][t][w];
      p.sumsq += warp_f[2][t][w];
    }
    if (ext_index[0][t] != kNone) {
      p.min = (double)ext_value[0][t];
      p.min_index = ext_index[0][t];
    }
    if (ext_index[1][t] != kNone) {
      p.max = (double)ext_value[1][t];
      p.max_index = ext_index[1][t];
    }
    static_cast<imgstat_partial *>(
        pass.out)[(uint64_t)t * pass.out_stride + blockIdx.x] = p;
  }
}

template <typename Sample>
cudaError_t launch_hwc(const ist_pass *p, cudaStream_t s) {
  constexpr bool kPack = sizeof(Sample) == 2 && IMGSTAT_HWC16_PACK;
  /* a plain `if`: the unit kernel is compiled in every build */
  constexpr bool kU16 = sizeof(Sample) == 2;
  switch (p->channels) {
  case 2:
    if (kU16 && hwc16_by_units(2))
      hwc_unit_kernel<WordU16, 2><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else if constexpr (kPack)
      hwc16_pack_kernel<2><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else
      hwc_stats_kernel<Sample, 2><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    break;
  case 3:
    if (kU16 && hwc16_by_units(3))
      hwc_unit_kernel<WordU16, 3><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else if constexpr (kPack)
      hwc16_pack_kernel<3><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else
      hwc_stats_kernel<Sample, 3><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    break;
  case 4:
    if (kU16 && hwc16_by_units(4))
      hwc_unit_kernel<WordU16, 4><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else if constexpr (kPack)
      hwc16_pack_kernel<4><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    else
      hwc_stats_kernel<Sample, 4><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

/* Whether the current device takes programmatic dependent launches
 * (sm_90 and later), read once a device. */
bool pdl_device() {
  static std::atomic<int> known[64]; /* 0 unknown, 1 no, 2 yes */
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
    return false;
  int k = known[dev].load(std::memory_order_relaxed);
  if (k == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                               dev) != cudaSuccess)
      return false;
    k = major >= 9 ? 2 : 1;
    known[dev].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

/* kernel<<<grid, block, 0, s>>>(args...), as a programmatic dependent
 * launch when `dependent` (the kernel calls pdl_wait first) and the
 * feature is on. */
template <typename... Args>
cudaError_t launch_kernel(void (*kernel)(Args...), dim3 grid, int block,
                          cudaStream_t s, bool dependent, Args... args) {
  if (IMGSTAT_FAST_PDL && dependent && pdl_device()) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
  }
  kernel<<<grid, block, 0, s>>>(args...);
  return cudaGetLastError();
}

template <typename K>
cudaError_t launch(K kernel, int block, const ist_pass *p, cudaStream_t s,
                   bool dependent = false) {
  if (p->grid == 0 || p->channels == 0 || p->channels > 65535)
    return cudaErrorInvalidValue;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  return launch_kernel(kernel, dim3(p->grid, p->channels), block, s, dependent,
                       *p);
}

/* Blocks for `units` tiles (chunks), at most `wave` at once
 * (IMGSTAT_FAST_BALANCE: whole rounds). */
uint64_t balanced_grid(uint64_t units, uint64_t wave) {
  uint64_t grid = units < wave ? units : wave;
  if (IMGSTAT_FAST_BALANCE && units > wave && wave > 0) {
    const uint64_t per = (units + wave - 1) / wave;
    grid = (units + per - 1) / per;
  }
  return grid < 1 ? 1 : grid;
}

} // namespace

int ist_fast_block_size(void) { return FastPolicy::kBlock; }
int ist_fast_bytes_per_thread(void) { return 16 * FastPolicy::kItems; }

/* Blocks for a plane of `bytes` (each of `channels`), per_sm blocks of the
 * kernel a multiprocessor. */
static unsigned fast_grid(uint64_t bytes, uint32_t channels, int sm_count,
                          int per_sm) {
  uint64_t tile_bytes = (uint64_t)16 * FastPolicy::kTile;
  uint64_t tiles = (bytes + tile_bytes - 1) / tile_bytes;
  uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * (uint64_t)per_sm /
                  (channels ? channels : 1);
  return (unsigned)balanced_grid(tiles, wave);
}

unsigned ist_fast_grid(uint64_t bytes, uint32_t channels, int sm_count) {
  return fast_grid(bytes, channels, sm_count, FastPolicy::kPlaneBlocksPerSm);
}

unsigned ist_fold_grid(uint64_t n) {
  uint64_t chunk = (uint64_t)FoldPolicy::kBlock * FoldPolicy::kItems;
  uint64_t grid = (n + chunk - 1) / chunk;
  if (grid > 0x7fffffffu)
    return 0;
  return grid < 1 ? 1u : (unsigned)grid;
}

cudaError_t ist_fast_stats(imgstat_sample sample, const ist_pass *p,
                           cudaStream_t s) {
  switch (sample) {
  case IMGSTAT_U8:
    return launch(fast_stats_kernel<AccU8>, FastPolicy::kBlock, p, s);
  case IMGSTAT_U16:
    return launch(fast_stats_kernel<AccU16>, FastPolicy::kBlock, p, s);
  case IMGSTAT_F32:
    /* interleaved: channel c's samples C floats apart, one by one; or
     * (IMGSTAT_F32_HWC_ALL, the image at a 16-byte boundary) every channel
     * in one grid */
#if IMGSTAT_F32_HWC_ALL
  {
    if (p->in_stride == 1 && p->channels == p->sample_stride &&
        (uintptr_t)p->in % 16 == 0 && p->grid > 0) {
      cudaError_t e = ist_cuda_launch_gate();
      if (e != cudaSuccess)
        return e;
      switch (p->sample_stride) {
      case 2:
        return launch_kernel(fast_f32_hwc_kernel<2>, dim3(p->grid, 1),
                             FastPolicy::kBlock, s, true, *p);
      case 3:
        return launch_kernel(fast_f32_hwc_kernel<3>, dim3(p->grid, 1),
                             FastPolicy::kBlock, s, true, *p);
      case 4:
        return launch_kernel(fast_f32_hwc_kernel<4>, dim3(p->grid, 1),
                             FastPolicy::kBlock, s, true, *p);
      default:
        break;
      }
    }
  }
#endif
    switch (p->sample_stride) {
    case 2:
      return launch(fast_f32_kernel<false, 2>, FastPolicy::kBlock, p, s, true);
    case 3:
      return launch(fast_f32_kernel<false, 3>, FastPolicy::kBlock, p, s, true);
    case 4:
      return launch(fast_f32_kernel<false, 4>, FastPolicy::kBlock, p, s, true);
    case 0:
    case 1:
      break;
    default:
      return cudaErrorInvalidValue;
    }
    /* one layout for every plane of the launch: all 16-byte aligned, or
     * four 4-byte loads a vector */
    if ((uintptr_t)p->in % 16 == 0 && p->in_stride % 4 == 0)
      return launch(fast_f32_kernel<true, 1>, FastPolicy::kBlock, p, s, true);
    return launch(fast_f32_kernel<false, 1>, FastPolicy::kBlock, p, s, true);
  }
  return cudaErrorInvalidValue;
}

/* Step 0 of float_order.h for each plane: one warp a plane (blockIdx.x). */
__global__ void __launch_bounds__(32)
    f32_shift_kernel(ist_pass pass, double *d_k) {
  pdl_trigger();
  const double k = ist_fo_warp_plane_shift(
      static_cast<const float *>(pass.planes) + blockIdx.x * pass.plane_stride,
      pass.plane_n, pass.sample_stride ? pass.sample_stride : 1);
  if (threadIdx.x == 0)
    d_k[blockIdx.x] = k;
}

cudaError_t ist_f32_shifts(const ist_pass *p, double *d_k, cudaStream_t s) {
  if (p->channels == 0)
    return cudaSuccess;
  f32_shift_kernel<<<p->channels, 32, 0, s>>>(*p, d_k);
  return cudaGetLastError();
}

uint64_t ist_f32_chunks(uint64_t n) {
  uint64_t chunks = (n + IST_FO_CHUNK - 1) / IST_FO_CHUNK;
  return chunks ? chunks : 1;
}

unsigned ist_f32_grid(uint64_t n, uint32_t channels, int sm_count,
                      bool planes) {
  /* fast_f32_kernel's blocks a multiprocessor: <.., 1> over planes, the
   * strided <false, C> over an interleaved image's channels */
  const int per_sm =
      planes ? F32Shape<1>::kBlocksPerSm : F32Shape<2>::kBlocksPerSm;
  uint64_t wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * per_sm /
                  (channels ? channels : 1);
#if IMGSTAT_F32_HWC_ALL
  if (!planes) /* interleaved: one grid for every channel */
    wave = (uint64_t)(sm_count > 0 ? sm_count : 1) * kF32HwcBlocksPerSm;
#endif
  uint64_t chunks = ist_f32_chunks(n);
  uint64_t grid = planes          ? balanced_grid(chunks, wave)
                  : chunks < wave ? chunks
                                  : (wave ? wave : 1);
  if (grid > 0x7fffffffu)
    return 0;
  return (unsigned)grid;
}

cudaError_t ist_fast_sum_i32(const ist_pass *p, cudaStream_t s) {
  return launch(fast_sum_i32_kernel, SumPolicy::kBlock, p, s);
}

unsigned ist_hwc_grid(imgstat_sample sample, uint64_t bytes, uint32_t channels,
                      int sm_count) {
  const uint64_t vecs = channels == 3 ? 3 : 4;
  /* the kernels' tiles: u8 (and u16 by units, IMGSTAT_HWC16_UNIT)
   * hwc_units(size, C) units of C vectors a thread, u16 kV vectors (sized as
   * u16's, without groups, for both before whole rounds) */
  const bool unit16 = sample == IMGSTAT_U16 && hwc16_by_units((int)channels);
  const uint64_t units = (uint64_t)hwc_units(
      sample == IMGSTAT_U16 ? 2 : 1, (int)channels); /* a thread's, a tile */
  const uint64_t tile_bytes =
      unit16 ? (uint64_t)16 * FastPolicy::kBlock * units * channels
      : sample == IMGSTAT_U16
          ? (uint64_t)16 * FastPolicy::kBlock * vecs * kHwc16Groups
      : IMGSTAT_FAST_BALANCE
          ? (uint64_t)16 * FastPolicy::kBlock * units * channels
          : (uint64_t)16 * FastPolicy::kBlock * vecs;
  const uint64_t tiles = (bytes + tile_bytes - 1) / tile_bytes;
  const uint64_t wave =
      (uint64_t)(sm_count > 0 ? sm_count : 1) *
      (unit16                  ? hwc_unit_blocks_per_sm(2, (int)channels)
       : sample == IMGSTAT_U16 ? kHwc16BlocksPerSm
                               : hwc_u8_blocks_per_sm((int)channels));
  return (unsigned)balanced_grid(tiles, wave);
}

cudaError_t ist_hwc_stats(imgstat_sample sample, const ist_pass *p,
                          cudaStream_t s) {
  if (p->grid == 0 || p->channels < 2 || p->channels > 4)
    return cudaErrorInvalidValue;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  if (sample == IMGSTAT_U8) {
    switch (p->channels) {
    case 2:
      hwc_unit_kernel<WordU8, 2><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
      break;
    case 3:
      hwc_unit_kernel<WordU8, 3><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
      break;
    default:
      hwc_unit_kernel<WordU8, 4><<<p->grid, FastPolicy::kBlock, 0, s>>>(*p);
      break;
    }
    return cudaGetLastError();
  }
  if (sample == IMGSTAT_U16)
    return launch_hwc<uint16_t>(p, s);
  return cudaErrorInvalidValue;
}

cudaError_t ist_fold_stats(imgstat_sample sample, const ist_pass *p,
                           cudaStream_t s) {
  if (sample == IMGSTAT_F32)
    return launch(fold_stats_kernel<true>, FoldPolicy::kBlock, p, s, true);
  return launch(fold_stats_kernel<false>, FoldPolicy::kBlock, p, s, true);
}

cudaError_t ist_fold_sum_i64(const ist_pass *p, cudaStream_t s) {
  return launch(fold_sum_i64_kernel, FoldPolicy::kBlock, p, s, true);
}

uint32_t ist_fast_segment_blocks(uint64_t bytes, int sm_count) {
  /* at least IMGSTAT_SEG_TILES tiles a block (integer partials: any
   * partition gives the same bits) */
  const uint64_t tile_bytes = (uint64_t)16 * FastPolicy::kTile;
  return fast_grid((bytes + IMGSTAT_SEG_TILES * tile_bytes - 1) /
                       (IMGSTAT_SEG_TILES * tile_bytes) * tile_bytes,
                   1, sm_count, FastPolicy::kBlocksPerSm);
}

cudaError_t ist_fast_stats_segments(imgstat_sample sample,
                                    const ist_segment *d_seg, int nseg,
                                    uint64_t total_blocks,
                                    imgstat_partial *d_partials,
                                    imgstat_partial *d_out, cudaStream_t s) {
  if (nseg <= 0 || total_blocks == 0 || total_blocks > 0x7fffffffu ||
      (sample != IMGSTAT_U8 && sample != IMGSTAT_U16))
    return cudaErrorInvalidValue;
  cudaError_t e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  /* every segment has at least one block: as many blocks as segments is
   * one each, block k segment k's partial, the fold's output unchanged */
  const bool direct = IMGSTAT_SEG_DIRECT && total_blocks == (uint64_t)nseg;
  imgstat_partial *blocks_out = direct ? d_out : d_partials;
  if (sample == IMGSTAT_U8)
    fast_segments_kernel<AccU8>
        <<<(unsigned)total_blocks, FastPolicy::kBlock, 0, s>>>(d_seg, nseg,
                                                               blocks_out);
  else
    fast_segments_kernel<AccU16>
        <<<(unsigned)total_blocks, FastPolicy::kBlock, 0, s>>>(d_seg, nseg,
                                                               blocks_out);
  e = cudaGetLastError();
  if (e != cudaSuccess || direct)
    return e;
  e = ist_cuda_launch_gate();
  if (e != cudaSuccess)
    return e;
  return launch_kernel(fold_segments_kernel, dim3((unsigned)nseg),
                       FoldPolicy::kBlock, s, true, d_seg,
                       (const imgstat_partial *)d_partials, d_out);
}
