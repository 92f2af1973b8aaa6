/*
 * A CPU model of the packed interleaved u16 kernel (cuda/fast.cu,
 * hwc16_pack_kernel under IMGSTAT_HWC16_PACK), for tests/tools/
 * hwc16_pack_model.py: the kernel's own accumulator (the source of Hwc,
 * HwcAcc and HwcPack16, cut from cuda/fast.cu into hwc16_pack.inc and
 * compiled here for the host with stand-ins for the device intrinsics),
 * driven thread by thread as the kernel drives it (its tile loop, flushes
 * and partial tile), then the block's merge as hwc_block_first does it
 * (keys of value and tile, the key holders' re-read of their tile) and the
 * fold of the blocks' partials; each channel's count, sum, sum of squares,
 * min, max and first positions compared with a plain scan of the image,
 * for 2, 3 and 4 channels, many sizes, several grids and data patterns
 * (ties in both halves of the 32-bit words, channels at the bounds 0 and
 * 65535, constant images). With -DUNIT=1 the same for the kernel by
 * units (hwc_unit_kernel<WordU16, C>, IMGSTAT_HWC16_UNIT; with -DU8=1
 * hwc_unit_kernel<WordU8, C>, samples 0..255): its accumulator
 * HwcUnit and unit split and re-read cut from cuda/fast.cu (hwc_unit.inc),
 * its loop and integer block merge (keys of value and unit) as the kernel
 * has them. The GPU itself is checked on the GPU host
 * (tests/gpu/checks/kernel_roof.sh); this runs wherever a C++ compiler
 * does. Exit status 1 when a case differs.
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>
using std::max;
using std::min;
/* the stand-ins for what the cut source uses of CUDA and of fast.cu */
#define __device__
#define __forceinline__ inline
struct uint4 {
  unsigned x, y, z, w;
};
static uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return uint4{a, b, c, d};
}
#ifndef GROUPS
#define GROUPS 1
#endif
#ifndef FLUSH
#define FLUSH 0
#endif
#ifndef SKIP
#define SKIP 1
#endif
#ifndef UNIT
#define UNIT 0
#endif
#ifndef U8 /* with UNIT: the u8 kernel (hwc_unit_kernel<WordU8, C>) */
#define U8 0
#endif
#ifndef LAZY /* IMGSTAT_FAST_LAZY_FIRST */
#define LAZY 1
#endif
#ifndef HIGH /* IMGSTAT_U8_HIGH_EXTREMES */
#define HIGH 1
#endif
#define IMGSTAT_FAST_LAZY_FIRST LAZY
#define IMGSTAT_U8_HIGH_EXTREMES HIGH
#define IMGSTAT_HWC_NOSPLIT_DIAG 0 /* a timing diagnostic on the GPU host */
struct FastPolicy {
  static constexpr int kBlock = 256;
  static constexpr bool kSaturatedSkip = SKIP;
};
constexpr uint64_t kNone = UINT64_MAX;
#define IMGSTAT_HWC16_PACK 1
#define IMGSTAT_HWC16_FLUSH_TILES FLUSH
constexpr int kHwc16Groups = GROUPS;
static unsigned min_u16x2(unsigned a, unsigned b) {
  return min(a & 0xffffu, b & 0xffffu) | min(a >> 16, b >> 16) << 16;
}
static unsigned max_u16x2(unsigned a, unsigned b) {
  return max(a & 0xffffu, b & 0xffffu) | max(a >> 16, b >> 16) << 16;
}
template <typename Sample> Sample sample_of(const unsigned (&w)[4], int j) {
  constexpr int kSize = (int)sizeof(Sample);
  unsigned word = w[(j * kSize) / 4];
  constexpr unsigned kMask = (1u << (8 * kSize)) - 1;
  return (Sample)((word >> (((j * kSize) % 4) * 8)) & kMask);
}
#include "hwc16_pack.inc" /* Hwc, HwcAcc, HwcPack16 (the .py cuts it) */
#if UNIT
/* the interleaved kernel by units (hwc_unit_kernel<WordU16, C>,
 * IMGSTAT_HWC16_UNIT): what its cut source uses besides */
#ifndef UNITS
#define UNITS 2
#endif
constexpr int kHwcUnits = UNITS;
constexpr int hwc_units(int, int) { return UNITS; }
static struct { unsigned x; } threadIdx;
static unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t b = (uint64_t)y << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i)
    r |= (unsigned)(b >> (8 * ((s >> (4 * i)) & 7)) & 0xffu) << (8 * i);
  return r;
}
static unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i)
    c += (a >> (8 * i) & 0xffu) * (b >> (8 * i) & 0xffu);
  return c;
}
static uint4 __ldg(const uint4 *p) { return *p; }
#include "hwc_unit.inc" /* WordU8/16, find_in_vector, HwcUnit (cut too) */
#endif
#if UNIT && U8
using Sample = uint8_t;
#define WORD WordU8
#else
using Sample = uint16_t;
#define WORD WordU16
#endif
constexpr unsigned kMaxV = (1u << (8 * sizeof(Sample))) - 1;

struct Part {
  uint64_t count = 0, sum = 0, sumsq = 0;
  int vmin = 65536, vmax = -1;
  uint64_t imin = kNone, imax = kNone;
};
static void offer(Part &p, const Part &q) {
  p.count += q.count;
  p.sum += q.sum;
  p.sumsq += q.sumsq;
  if (q.imin != kNone &&
      (q.vmin < p.vmin || (q.vmin == p.vmin && q.imin < p.imin))) {
    p.vmin = q.vmin;
    p.imin = q.imin;
  }
  if (q.imax != kNone &&
      (q.vmax > p.vmax || (q.vmax == p.vmax && q.imax < p.imax))) {
    p.vmax = q.vmax;
    p.imax = q.imax;
  }
}

/* The kernel over an image of npix pixels on a grid of G blocks: each
 * thread's loop as hwc16_pack_kernel's, each block's partial of each channel
 * as hwc_block_first makes it, the blocks' partials folded. */
template <int C>
std::vector<Part> gpu(const uint16_t *data, uint64_t npix, unsigned G) {
  using H = Hwc<uint16_t, C>;
  using A = HwcPack16<C>;
  const uint64_t total = npix * C, nvec = total / H::kPerVec;
  const uint4 *vec = reinterpret_cast<const uint4 *>(data);
  const uint64_t full = nvec / H::kTileVecs;
  std::vector<Part> out(C);
  std::vector<HwcAcc<uint16_t, C>> acc(256, HwcAcc<uint16_t, C>());
  for (unsigned b = 0; b < G; ++b) {
    for (unsigned t = 0; t < 256; ++t) {
      A a;
      uint64_t tile = b;
      while (tile < full) {
        const uint64_t stop = min(full, tile + A::kFlushTiles * G);
        for (; tile < stop; tile += G) {
          uint4 v[H::kV];
          for (int j = 0; j < H::kV; ++j)
            v[j] = vec[tile * H::kTileVecs + (uint64_t)j * 256 + t];
          a.add_tile(v, H::kV, (unsigned)tile);
        }
        a.flush();
      }
      int nvalid = 0;
      if (tile == full && full * H::kTileVecs < nvec) {
        uint4 v[H::kV];
        for (int j = 0; j < H::kV; ++j) {
          uint64_t i = tile * H::kTileVecs + (uint64_t)j * 256 + t;
          if (i < nvec) {
            v[j] = vec[i];
            nvalid = j + 1;
          } else
            v[j] = make_uint4(0, 0, 0, 0);
        }
        if (nvalid > 0) {
          a.add_tile(v, nvalid, (unsigned)tile);
          a.flush();
        }
      }
      const uint64_t whole = b < full ? (full - 1 - b) / G + 1 : 0;
      const bool any_vector = (uint64_t)b * H::kTileVecs + t < nvec;
      acc[t] = a.result(whole, nvalid, any_vector, b);
    }
    // hwc_block_first
    constexpr unsigned kTailTile = 0xfffffffeu;
    constexpr unsigned long long kNoKey = ~0ull;
    for (int c = 0; c < C; ++c) {
      Part p;
      unsigned long long best[2] = {kNoKey, kNoKey};
      std::vector<unsigned long long> f3(256), f4(256);
      std::vector<int> qq(256);
      for (unsigned t = 0; t < 256; ++t) {
        const int r = (int)(((uint64_t)t * 8) % C);
        int q = 0;
        for (int k = 0; k < C; ++k)
          if ((k + r) % C == c)
            q = k;
        qq[t] = q;
        const auto &a = acc[t];
        p.count += a.count[q];
        p.sum += a.sum[q];
        p.sumsq += a.sumsq[q];
        f3[t] = a.min_tile[q] != kNoTile
                    ? (unsigned long long)a.vmin[q] << 32 | a.min_tile[q]
                    : kNoKey;
        f4[t] =
            a.max_tile[q] != kNoTile
                ? (unsigned long long)(65535 - a.vmax[q]) << 32 | a.max_tile[q]
                : kNoKey;
        const uint64_t i = nvec * 8 + t;
        if (b == 0 && i < total && (int)(i % C) == c) {
          const unsigned long long x = data[i];
          p.count += 1;
          p.sum += x;
          p.sumsq += x * x;
          f3[t] = min(f3[t], x << 32 | kTailTile);
          f4[t] = min(f4[t], (65535 - x) << 32 | kTailTile);
        }
        best[0] = min(best[0], f3[t]);
        best[1] = min(best[1], f4[t]);
      }
      uint64_t at[2] = {kNone, kNone};
      for (int e = 0; e < 2; ++e) {
        if (best[e] == kNoKey)
          continue;
        for (unsigned t = 0; t < 256; ++t) {
          if ((e ? f4[t] : f3[t]) != best[e])
            continue;
          const unsigned tile = (unsigned)(best[e] & 0xffffffffu);
          const int value =
              e == 0 ? (int)(best[e] >> 32) : 65535 - (int)(best[e] >> 32);
          uint64_t pix;
          if (tile == kTailTile) {
            pix = (nvec * 8 + t) / C;
          } else { // hwc_first
            pix = kNone;
            for (int j = H::kV - 1; j >= 0; --j) {
              const uint64_t i =
                  (uint64_t)tile * H::kTileVecs + (uint64_t)j * 256 + t;
              if (i < nvec) {
                const uint4 v = vec[i];
                const unsigned w[4] = {v.x, v.y, v.z, v.w};
                for (int bb = 7; bb >= 0; --bb)
                  if (H::rel(j, bb) == qq[t] &&
                      (int)sample_of<uint16_t>(w, bb) == value)
                    pix = (i * 8 + bb) / C;
              }
            }
            if (pix == kNone) {
              printf(
                  "BUG: key holder found nothing (block %u thread %u c %d)\n",
                  b, t, c);
              exit(2);
            }
          }
          at[e] = min(at[e], (uint64_t)pix);
        }
      }
      if (best[0] != kNoKey && at[0] != kNone) {
        p.vmin = (int)(best[0] >> 32);
        p.imin = at[0];
      }
      if (best[1] != kNoKey && at[1] != kNone) {
        p.vmax = 65535 - (int)(best[1] >> 32);
        p.imax = at[1];
      }
      offer(out[c], p);
    }
  }
  return out;
}

#if UNIT
/* The kernel by units over an image of npix pixels on a grid of G blocks:
 * each thread's loop as hwc_unit_kernel's, each block's partial of each
 * channel as its integer merge makes it (keys of value and unit, the tail
 * sample after every unit, the block's unit re-read), the blocks' partials
 * folded. */
template <int C>
std::vector<Part> gpu_unit(const Sample *data, uint64_t npix, unsigned G) {
  using A = HwcUnit<WORD, C>;
  constexpr unsigned long long kNoKey = ~0ull;
  const uint64_t total = npix * C, units = total / (WORD::kPerVector * C);
  const uint4 *vec = reinterpret_cast<const uint4 *>(data);
  constexpr uint64_t kTileUnits = 256ull * kHwcUnits;
  const uint64_t full = units / kTileUnits;
  std::vector<Part> out(C);
  for (unsigned b = 0; b < G; ++b) {
    Part p[C];
    unsigned long long best[2][C];
    for (int c = 0; c < C; ++c)
      best[0][c] = best[1][c] = kNoKey;
    for (unsigned t = 0; t < 256; ++t) {
      threadIdx.x = t;
      A a;
      uint64_t tile = b;
      for (; tile < full; tile += G) {
        uint4 v[kHwcUnits][C];
        for (int k = 0; k < kHwcUnits; ++k)
          hwc_load_unit<C>(vec, tile * kTileUnits + (uint64_t)k * 256 + t,
                           v[k]);
        a.add_tile(v, kHwcUnits, tile);
      }
      if (tile == full && full * kTileUnits < units) {
        uint4 v[kHwcUnits][C];
        int nvalid = 0;
        for (int k = 0; k < kHwcUnits; ++k) {
          const uint64_t u = tile * kTileUnits + (uint64_t)k * 256 + t;
          if (u < units) {
            hwc_load_unit<C>(vec, u, v[k]);
            nvalid = k + 1;
          } else
            for (int j = 0; j < C; ++j)
              v[k][j] = make_uint4(0, 0, 0, 0);
        }
        if (nvalid > 0)
          a.add_tile(v, nvalid, tile);
      }
      const uint64_t i = units * WORD::kPerVector * C + t; /* hwc_tail */
      for (int c = 0; c < C; ++c) {
        p[c].count += a.count;
        p[c].sum += a.sum[c];
        p[c].sumsq += a.sumsq[c];
        unsigned long long kmin =
            a.min_unit[c] != kNone
                ? (unsigned long long)a.vmin[c] << 48 | a.min_unit[c]
                : kNoKey;
        unsigned long long kmax =
            a.max_unit[c] != kNone
                ? (unsigned long long)(kMaxV - a.vmax[c]) << 48 | a.max_unit[c]
                : kNoKey;
        if (b == 0 && i < total && (int)(i % C) == c) {
          const unsigned long long x = data[i], order = units + i / C;
          p[c].count += 1;
          p[c].sum += x;
          p[c].sumsq += x * x;
          kmin = min(kmin, x << 48 | order);
          kmax = min(kmax, (kMaxV - x) << 48 | order);
        }
        best[0][c] = min(best[0][c], kmin);
        best[1][c] = min(best[1][c], kmax);
      }
    }
    for (int c = 0; c < C; ++c) {
      for (int e = 0; e < 2; ++e) {
        const unsigned long long key = best[e][c];
        if (key == kNoKey)
          continue;
        const int value = e == 0 ? (int)(key >> 48) : kMaxV - (int)(key >> 48);
        const uint64_t at = key & ((1ull << 48) - 1);
        const uint64_t pix = at < units
                                 ? hwc_unit_first<WORD, C>(vec, at, c, value)
                                 : at - units;
        if (pix == kNone) {
          printf("BUG: unit %llu holds no %d (block %u c %d)\n",
                 (unsigned long long)at, value, b, c);
          exit(2);
        }
        (e == 0 ? p[c].vmin : p[c].vmax) = value;
        (e == 0 ? p[c].imin : p[c].imax) = pix;
      }
      offer(out[c], p[c]);
    }
  }
  return out;
}
#endif

/* The plain scan: channel by channel, pixel by pixel, the first extreme
 * kept on strict improvement. */
static std::vector<Part> cpu(const Sample *d, uint64_t n, int C) {
  std::vector<Part> o(C);
  for (uint64_t p = 0; p < n; ++p)
    for (int c = 0; c < C; ++c) {
      const uint64_t x = d[p * C + c];
      Part &q = o[c];
      q.count++;
      q.sum += x;
      q.sumsq += x * x;
      if ((int)x < q.vmin) {
        q.vmin = (int)x;
        q.imin = p;
      }
      if ((int)x > q.vmax) {
        q.vmax = (int)x;
        q.imax = p;
      }
    }
  return o;
}

static uint64_t rng = 88172645463325252ull;
static unsigned nxt() {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

/* The images (kind; max the type's, 65535 or 255): 0 random 1..max-1, 1
 * full range, 2 constant with planted extremes, 3 middle values with ties of
 * the extremes, 4 channels at the bounds, 5 four values (ties everywhere), 6
 * only 0 and max, 7 all max, 8 all 0 (the packed extremes' starting
 * values), 9 a late strict min then ties, 10 ties across the halves of words
 * (halves()). */
static void pattern(std::vector<Sample> &h, uint64_t n, int ch, int kind) {
  const unsigned max = kMaxV;
  for (uint64_t i = 0; i < n * ch; ++i) {
    unsigned x = nxt();
    switch (kind) {
    case 0:
      h[i] = 1 + x % (max - 1);
      break;
    case 1:
      h[i] = (x >> 16) & max;
      break;
    case 2:
      h[i] = max == 65535 ? 30000 : 120;
      break;
    case 3:
      h[i] = max / 4 + x % (max / 2);
      break;
    case 4: {
      uint64_t p = i / ch;
      int c = (int)(i % ch);
      h[i] = c % 4 == 0   ? max
             : c % 4 == 1 ? 0
             : c % 4 == 2 ? ((x >> 16) & max)
                          : (p == n - 1 ? 0 : max);
      break;
    }
    case 5:
      h[i] = 100 + x % 4;
      break; // ties everywhere
    case 6:
      h[i] = (x & 1) ? max : 0;
      break; // bounds only
    case 7:
      h[i] = max;
      break; // constant at the min's sentinel
    case 8:
      h[i] = 0;
      break; // constant at the max's sentinel
    case 9:
      h[i] = max == 65535 ? 200 + x % 1000 : 20 + x % 100;
      break; // later improvements
    case 10:
      h[i] = max / 4 + x % (max / 2);
      break;
    }
  }
  if (kind == 2)
    for (int c = 0; c < ch; ++c) {
      const uint64_t at[] = {n / 3, n - 1, n / 2, n / 3 + 1, n / 7};
      for (int k = 0; k < 5; ++k)
        h[c * n + at[k] % n] = k % 2 == 0 ? 3 : max - max / 100;
    }
  if (kind == 3)
    for (int c = 0; c < ch; ++c) {
      const uint64_t lo[] = {3 * n / 10 + c, 3 * n / 10 + c + 1,
                             3 * n / 10 + c + 2, 6 * n / 10, n - 1};
      const uint64_t hi[] = {n / 7 + 2 * c, n / 2, 4 * n / 5 - c, n - 1 - c};
      for (uint64_t p : hi)
        if (p < n)
          h[p * ch + c] = max - 5;
      for (uint64_t p : lo)
        if (p < n)
          h[p * ch + c] = 5;
    }
  if (kind ==
      9) // a late strict improvement of the min in one channel, then ties
    for (int c = 0; c < ch; ++c) {
      uint64_t p = n - n / 5 + (uint64_t)c * 3;
      if (p < n)
        h[p * ch + c] = 7;
      for (uint64_t k = 1; k < 4; ++k)
        if (p + k * 997 < n)
          h[(p + k * 997) * ch + c] = 7;
    }
}

/* Each channel's min first in a high half of a word among the first pixels
 * and its max in a low half; from pixel n/2 on, every low half of the
 * channel the min and every high half the max (kernel_roof.cu's kind 5). */
static void halves(std::vector<Sample> &h, uint64_t n, int ch) {
  const unsigned max = kMaxV;
  for (int c = 0; c < ch; ++c) {
    bool lo_done = false, hi_done = false;
    for (uint64_t p = 0; p < n && p < 4; ++p) {
      const bool odd = (p * ch + c) % 2;
      if (odd && !hi_done) {
        h[p * ch + c] = 5;
        hi_done = true;
      }
      if (!odd && !lo_done) {
        h[p * ch + c] = max - 5;
        lo_done = true;
      }
    }
    for (uint64_t p = n / 2; p < n; ++p)
      h[p * ch + c] = (p * ch + c) % 2 ? max - 5 : 5;
  }
}

template <int C> int one(uint64_t n, int kind, unsigned G) {
  std::vector<Sample> h(n * C + 16);
  pattern(h, n, C, kind);
  if (kind == 10)
    halves(h, n, C);
#if UNIT
  auto g = gpu_unit<C>(h.data(), n, G);
#else
  auto g = gpu<C>(h.data(), n, G);
#endif
  auto w = cpu(h.data(), n, C);
  for (int c = 0; c < C; ++c) {
    const Part &a = g[c], &b = w[c];
    if (a.count != b.count || a.sum != b.sum || a.sumsq != b.sumsq ||
        a.vmin != b.vmin || a.imin != b.imin || a.vmax != b.vmax ||
        a.imax != b.imax) {
      printf("FAIL C=%d n=%llu kind=%d G=%u ch %d: gpu %llu %llu %llu min "
             "%d@%llu max %d@%llu; cpu %llu %llu %llu "
             "min %d@%llu max %d@%llu\n",
             C, (unsigned long long)n, kind, G, c, (unsigned long long)a.count,
             (unsigned long long)a.sum, (unsigned long long)a.sumsq, a.vmin,
             (unsigned long long)a.imin, a.vmax, (unsigned long long)a.imax,
             (unsigned long long)b.count, (unsigned long long)b.sum,
             (unsigned long long)b.sumsq, b.vmin, (unsigned long long)b.imin,
             b.vmax, (unsigned long long)b.imax);
      return 1;
    }
  }
  return 0;
}

static unsigned balanced(uint64_t units, uint64_t wave) {
  uint64_t grid = units < wave ? units : wave;
  if (units > wave) {
    const uint64_t per = (units + wave - 1) / wave;
    grid = (units + per - 1) / per;
  }
  return grid < 1 ? 1 : (unsigned)grid;
}

/* argv[1]: the largest image (pixels), default all sizes */
int main(int argc, char **argv) {
  const uint64_t largest = argc > 1 ? strtoull(argv[1], nullptr, 10) : ~0ull;
  int fails = 0, cases = 0;
  const uint64_t sizes[] = {1,     2,     3,      5,      7,    33,
                            682,   683,   2048,   2049,   4097, 6144,
                            12289, 65537, 262147, 1000003};
  for (uint64_t n : sizes)
    for (int kind = 0; kind < 11 && n <= largest; ++kind) {
      for (int C : {2, 3, 4}) {
#if UNIT
        const uint64_t tile_bytes = 16ull * 256 * kHwcUnits * C;
#else
        const uint64_t tile_bytes = 16ull * 256 * (C == 3 ? 3 : 4) * GROUPS;
#endif
        const uint64_t tiles =
            (n * C * sizeof(Sample) + tile_bytes - 1) / tile_bytes;
        const unsigned grids[] = {balanced(tiles, 132 * 2), 1, 3, 264};
        for (unsigned G : grids) {
          /* the large sizes: the kernel's grid, and blocks of many tiles;
           * a grid of mostly idle blocks for two sizes */
          if ((n > 65537 && G != grids[0] && G != 3) ||
              (G == 264 && n != 7 && n != 4097))
            continue;
          ++cases;
          fails += C == 2   ? one<2>(n, kind, G)
                   : C == 3 ? one<3>(n, kind, G)
                            : one<4>(n, kind, G);
        }
      }
    }
#if UNIT
  printf("%d cases, %d failed (%s by units: %d a thread a tile, skip %d, "
         "lazy %d, high %d)\n",
         cases, fails, U8 ? "u8" : "u16", kHwcUnits, SKIP, LAZY, HIGH);
#else
  printf("%d cases, %d failed (groups %d, flush %d, skip %d)\n", cases, fails,
         GROUPS, FLUSH, SKIP);
#endif
  return fails != 0;
}
