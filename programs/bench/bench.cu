/*
 * `imgstat bench`: measures the device reductions on the present GPU and
 * fills an imgstat_bench_result (bench.h); programs/bench/bench_cmd.c prints
 * it. Part of the program, not of the library: it calls the library's internal
 * launchers (reduce.cuh) directly.
 *
 * Method: CUDA events around every run; the first run of
 * each row is timed on its own and kept out of the median (it pays for lazy
 * module loading and cold caches); then `warmup` untimed runs; then `runs`
 * timed runs queued behind a short hold kernel, so that the host's launch
 * overhead does not open gaps between them (a row where the host still fell
 * behind says so in host_bound). Inputs are random, never zeros, and larger
 * than L2 unless the row says otherwise. Every result is compared with a host
 * computation; a mismatch is reported in the row, not hidden.
 */
#include "bench.h"
#include "cuda_check.cuh"
#include "reduce.cuh"

#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#ifdef IMGSTAT_HAVE_NPP
#include <nppdefs.h>
#include <nppi_statistics_functions.h>
#endif

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace {

/* ---- errors and small owners ------------------------------------------ */

#define BENCH_CUDA(call, what)                                                 \
  do {                                                                         \
    cudaError_t bench_e_ = (call);                                             \
    if (bench_e_ != cudaSuccess)                                               \
      return ist_cuda_fail(b->err, bench_e_, (what));                          \
  } while (0)

#define BENCH_TRY(...)                                                         \
  do {                                                                         \
    imgstat_status bench_s_ = (__VA_ARGS__);                                   \
    if (bench_s_ != IMGSTAT_OK)                                                \
      return bench_s_;                                                         \
  } while (0)

/* Host memory freed when the owner goes out of scope. */
struct host_buffer {
  void *p = nullptr;
  host_buffer() = default;
  host_buffer(const host_buffer &) = delete;
  host_buffer &operator=(const host_buffer &) = delete;
  ~host_buffer() { free(p); }
  bool alloc(size_t bytes) {
    free(p);
    p = malloc(bytes ? bytes : 1);
    return p != nullptr;
  }
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

double host_ms_now() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(
             clock::now().time_since_epoch())
      .count();
}

/* xorshift64*: fast, deterministic, and never stuck at zero. */
struct rng {
  uint64_t s;
  explicit rng(uint64_t seed) : s(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
};

void fill_random_bytes(void *dst, size_t bytes, uint64_t seed) {
  rng r(seed);
  unsigned char *p = static_cast<unsigned char *>(dst);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = r.next();
    memcpy(p + i, &v, 8);
  }
  uint64_t v = r.next();
  for (; i < bytes; i++, v >>= 8)
    p[i] = (unsigned char)v;
}

/* Floats in [0, 1) on a 2^-24 grid: finite, and not all equal. */
void fill_random_floats(float *dst, size_t n, uint64_t seed) {
  rng r(seed);
  for (size_t i = 0; i < n; i += 2) {
    uint64_t v = r.next();
    dst[i] = (float)(v >> 40) * (1.0f / 16777216.0f);
    if (i + 1 < n)
      dst[i + 1] = (float)((v >> 8) & 0xFFFFFF) * (1.0f / 16777216.0f);
  }
}

/* Holds the stream for `ns` nanoseconds so that the host can queue the timed
 * runs behind it; the runs then follow each other with no launch gaps. */
__global__ void bench_hold_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

/* Fills n 32-bit words with a hash of their index: copy input, not zeros. */
__global__ void bench_fill_kernel(uint32_t *p, uint64_t n, uint32_t seed) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x9E3779B9u ^ seed;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    p[i] = x | 1u;
  }
}

/* How long the stream is held before the timed runs: time for the host to
 * queue them all (a few microseconds each). */
constexpr unsigned long long kHoldNs = 10ull * 1000 * 1000; /* 10 ms */
constexpr unsigned long long kHoldNsPerRun = 50ull * 1000;  /* + 50 us */

/* ---- the benchmark's state --------------------------------------------- */

struct bench {
  imgstat_bench_result *res;
  imgstat_error *err;
  cudaStream_t stream = nullptr;
  cudaEvent_t *events = nullptr; /* 2 * (runs + 1) */
  cudaEvent_t hold_done = nullptr;
  int runs = 20;
  int warmup = 2;
  int quick = 0;
  uint64_t copy_bytes = 0;
  uint64_t small_ints = 0, large_ints = 0;
  uint32_t width = 0, height = 0;
  int small_block = 128;
  int skip_npp = 0;
  double *samples = nullptr;
  ~bench() {
    if (events)
      for (int i = 0; i < 2 * (runs + 1); i++)
        if (events[i])
          cudaEventDestroy(events[i]);
    free(events);
    free(samples);
    if (hold_done)
      cudaEventDestroy(hold_done);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

struct timing {
  double first_ms, median_ms, min_ms, max_ms;
  int host_bound;
};

/*
 * Times launch(buffer) as the method says. launch enqueues one run on
 * b->stream reading input buffer `buffer` (0 .. buffers-1; consecutive runs
 * use different buffers, so that with enough of them nothing stays in L2) and
 * returns the CUDA error of its calls.
 */
template <typename Launch>
imgstat_status time_runs(bench *b, int buffers, const char *what,
                         Launch &&launch, timing *t) {
  cudaStream_t s = b->stream;
  cudaEvent_t *ev = b->events;
  float ms = 0;
  if (buffers < 1)
    buffers = 1;

  BENCH_CUDA(cudaEventRecord(ev[0], s), what);
  BENCH_CUDA(launch(0), what);
  BENCH_CUDA(cudaEventRecord(ev[1], s), what);
  BENCH_CUDA(cudaStreamSynchronize(s), what);
  BENCH_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]), what);
  t->first_ms = ms;

  int next = 1;
  for (int w = 0; w < b->warmup; w++)
    BENCH_CUDA(launch(next++ % buffers), what);

  BENCH_CUDA(ist_cuda_launch_gate(), "hold kernel");
  bench_hold_kernel<<<1, 1, 0, s>>>(kHoldNs + kHoldNsPerRun * b->runs);
  BENCH_CUDA(cudaGetLastError(), "hold kernel");
  BENCH_CUDA(cudaEventRecord(b->hold_done, s), what);
  for (int i = 0; i < b->runs; i++) {
    BENCH_CUDA(cudaEventRecord(ev[2 + 2 * i], s), what);
    BENCH_CUDA(launch(next++ % buffers), what);
    BENCH_CUDA(cudaEventRecord(ev[3 + 2 * i], s), what);
  }
  /* Still holding: every run was queued before the first one started. */
  cudaError_t q = cudaEventQuery(b->hold_done);
  t->host_bound = (q == cudaSuccess);
  if (q != cudaSuccess && q != cudaErrorNotReady)
    return ist_cuda_fail(b->err, q, what);
  BENCH_CUDA(cudaStreamSynchronize(s), what);

  for (int i = 0; i < b->runs; i++) {
    BENCH_CUDA(cudaEventElapsedTime(&ms, ev[2 + 2 * i], ev[3 + 2 * i]), what);
    b->samples[i] = ms;
  }
  std::sort(b->samples, b->samples + b->runs);
  int n = b->runs;
  t->median_ms = (n % 2) ? b->samples[n / 2]
                         : 0.5 * (b->samples[n / 2 - 1] + b->samples[n / 2]);
  t->min_ms = b->samples[0];
  t->max_ms = b->samples[n - 1];
  return IMGSTAT_OK;
}

void copy_text(char *dst, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void copy_text(char *dst, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(dst, IMGSTAT_BENCH_TEXT, fmt, ap);
  va_end(ap);
}

imgstat_status add_row(bench *b, imgstat_bench_group group, const char *table,
                       const char *name, imgstat_bench_row **out) {
  imgstat_bench_result *r = b->res;
  if (r->row_count >= IMGSTAT_BENCH_MAX_ROWS)
    return imgstat_error_set(b->err, IMGSTAT_ERR_ARG,
                             "benchmark: more than %d rows",
                             IMGSTAT_BENCH_MAX_ROWS);
  imgstat_bench_row *row = &r->rows[r->row_count++];
  memset(row, 0, sizeof *row);
  row->group = group;
  row->kernel = -1;
  row->goal_met = -1;
  row->buffers = 1;
  copy_text(row->table, "%s", table);
  copy_text(row->name, "%s", name);
  *out = row;
  return IMGSTAT_OK;
}

/* Fills the row's times and the figures derived from them. */
void set_timing(bench *b, imgstat_bench_row *row, const timing &t,
                uint64_t bytes) {
  row->runs = b->runs;
  row->first_ms = t.first_ms;
  row->median_ms = t.median_ms;
  row->min_ms = t.min_ms;
  row->max_ms = t.max_ms;
  row->host_bound = t.host_bound;
  row->bytes = bytes;
  row->gbps = t.median_ms > 0 ? (double)bytes / (t.median_ms * 1e6) : 0;
  if (b->res->copy_gbps > 0)
    row->copy_fraction = row->gbps / b->res->copy_gbps;
}

void set_check(bench *b, imgstat_bench_row *row, bool ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void set_check(bench *b, imgstat_bench_row *row, bool ok, const char *fmt,
               ...) {
  row->checked = 1;
  row->ok = ok ? 1 : 0;
  if (!ok)
    b->res->failures++;
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(row->check, IMGSTAT_BENCH_TEXT, fmt, ap);
  va_end(ap);
}

void set_goal(imgstat_bench_row *row, double goal, bool met, const char *text) {
  row->goal = goal;
  row->goal_met = met ? 1 : 0;
  copy_text(row->goal_text, "%s", text);
}

/* "2^22" for powers of two, else the number. */
void count_text(char *buf, size_t size, uint64_t n) {
  if (n && (n & (n - 1)) == 0) {
    int k = 0;
    while ((UINT64_C(1) << k) != n)
      k++;
    snprintf(buf, size, "2^%d", k);
  } else {
    snprintf(buf, size, "%llu", (unsigned long long)n);
  }
}

void mib_text(char *buf, size_t size, uint64_t bytes) {
  double mib = (double)bytes / (1024.0 * 1024.0);
  if (mib >= 10)
    imgstat_number_snprintf(buf, size, "%.0f MiB", mib);
  else
    imgstat_number_snprintf(buf, size, "%.1f MiB", mib);
}

/* ---- comparisons with the host ------------------------------------------ */

bool close_rel(double a, double b, double tol) {
  if (a == b)
    return true;
  double scale = std::max(std::fabs(a), std::fabs(b));
  return std::fabs(a - b) <= tol * scale;
}

/* Compares a device partial with the host's by the backends' rule
 * (imgstat_partial_same: every field exactly, float mean and M2 to the bit);
 * when they differ, why says where. */
bool partials_agree(const imgstat_partial &g, const imgstat_partial &c,
                    imgstat_sample sample, char *why, size_t size) {
  if (imgstat_partial_same(&g, &c, sample))
    return true;
  if (g.count != c.count || g.nan_count != c.nan_count ||
      g.inf_count != c.inf_count) {
    snprintf(why, size, "count %llu vs host %llu", (unsigned long long)g.count,
             (unsigned long long)c.count);
    return false;
  }
  if (g.min != c.min || g.min_index != c.min_index) {
    imgstat_number_snprintf(why, size, "min %.9g at %llu vs host %.9g at %llu",
                            g.min, (unsigned long long)g.min_index, c.min,
                            (unsigned long long)c.min_index);
    return false;
  }
  if (g.max != c.max || g.max_index != c.max_index) {
    imgstat_number_snprintf(why, size, "max %.9g at %llu vs host %.9g at %llu",
                            g.max, (unsigned long long)g.max_index, c.max,
                            (unsigned long long)c.max_index);
    return false;
  }
  if (sample == IMGSTAT_F32) {
    if (memcmp(&g.mean, &c.mean, sizeof g.mean) != 0 ||
        memcmp(&g.m2, &c.m2, sizeof g.m2) != 0) {
      imgstat_number_snprintf(why, size,
                              "mean %.17g m2 %.17g vs host %.17g %.17g", g.mean,
                              g.m2, c.mean, c.m2);
      return false;
    }
  } else if (g.sum != c.sum || g.sumsq != c.sumsq) {
    snprintf(why, size, "sum %llu sumsq %llu vs host %llu %llu",
             (unsigned long long)g.sum, (unsigned long long)g.sumsq,
             (unsigned long long)c.sum, (unsigned long long)c.sumsq);
    return false;
  }
  snprintf(why, size, "differs from the host's");
  return false;
}

/* Host reference partials of `channels` planes of w x h samples. */
imgstat_status host_partials(bench *b, void *h_planes, uint32_t w, uint32_t h,
                             int channels, imgstat_sample sample,
                             imgstat_partial out[IMGSTAT_MAX_CHANNELS]) {
  imgstat_image img;
  memset(&img, 0, sizeof img);
  img.width = w;
  img.height = h;
  img.channels = channels;
  img.sample = sample;
  img.data = h_planes;
  size_t plane = (size_t)w * h * (size_t)sample;
  for (int c = 0; c < channels; c++)
    img.planes[c] = static_cast<unsigned char *>(h_planes) + c * plane;
  img.format = "bench";
  return imgstat_cpu_stats(&img, 0, out, b->err);
}

/* ---- 1. device-to-device copy ------------------------------------------- */

imgstat_status bench_copy(bench *b) {
  uint64_t bytes = b->copy_bytes & ~UINT64_C(3);
  ist_devbuf src, dst;
  BENCH_CUDA(src.reserve(bytes), "allocating the copy source");
  BENCH_CUDA(dst.reserve(bytes), "allocating the copy destination");
  BENCH_CUDA(ist_cuda_launch_gate(), "filling the copy source");
  bench_fill_kernel<<<4 * b->res->sm_count, 256, 0, b->stream>>>(
      src.as<uint32_t>(), bytes / 4, 0x1234567u);
  BENCH_CUDA(cudaGetLastError(), "filling the copy source");

  char size_text[32], table[IMGSTAT_BENCH_TEXT];
  mib_text(size_text, sizeof size_text, bytes);
  copy_text(table, "device-to-device copy (cudaMemcpyAsync), %s", size_text);
  imgstat_bench_row *row;
  BENCH_TRY(add_row(b, IMGSTAT_BENCH_COPY, table, "copy", &row));
  row->elements = bytes;
  copy_text(row->note, "bytes read + bytes written");
  timing t = timing();
  BENCH_TRY(time_runs(
      b, 1, "device-to-device copy",
      [&](int) {
        return cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice,
                               b->stream);
      },
      &t));
  b->res->copy_gbps = t.median_ms > 0 ? 2.0 * bytes / (t.median_ms * 1e6) : 0;
  set_timing(b, row, t, 2 * bytes);
  row->copy_fraction = 1.0;

  /* Check the first and the last MiB. */
  size_t part = (size_t)std::min<uint64_t>(bytes / 2, 1 << 20);
  host_buffer hs, hd;
  if (!hs.alloc(2 * part) || !hd.alloc(2 * part))
    return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
  unsigned char *s = hs.as<unsigned char>(), *d = hd.as<unsigned char>();
  BENCH_CUDA(cudaMemcpy(s, src.p, part, cudaMemcpyDeviceToHost), "copy check");
  BENCH_CUDA(cudaMemcpy(s + part, src.as<unsigned char>() + bytes - part, part,
                        cudaMemcpyDeviceToHost),
             "copy check");
  BENCH_CUDA(cudaMemcpy(d, dst.p, part, cudaMemcpyDeviceToHost), "copy check");
  BENCH_CUDA(cudaMemcpy(d + part, dst.as<unsigned char>() + bytes - part, part,
                        cudaMemcpyDeviceToHost),
             "copy check");
  bool ok = memcmp(s, d, 2 * part) == 0;
  set_check(b, row, ok,
            ok ? "first and last MiB equal the source"
               : "destination differs from the source");
  return IMGSTAT_OK;
}

/* ---- 2. the ladder ------------------------------------------------------ */

/*
 * One ladder table: kernels 1..7, then fast for comparison, a row each,
 * every run reading one of `buffers` inputs in turn. size(k, &bytes) asks
 * kernel k's scratch; run(k, i, scratch, &bytes, out) queues one run on
 * input i; check(k, row, out) compares the result (out_bytes at out,
 * poisoned before each row) with the host's. block: the ladder's block size
 * as the rows show it; bytes: what a run must read.
 */
template <typename Size, typename Run, typename Check>
imgstat_status ladder_table(bench *b, const char *table, const char *note,
                            uint64_t n, uint64_t bytes, int block, int buffers,
                            size_t out_bytes, Size size, Run run, Check check) {
  size_t scratch_bytes = 0;
  for (int k = 0; k <= IMGSTAT_KERNEL_LADDER_MAX; k++) {
    size_t need = 0;
    BENCH_CUDA(size(k, &need), "sizing the ladder's scratch");
    scratch_bytes = std::max(scratch_bytes, need);
  }
  ist_devbuf scratch, out;
  BENCH_CUDA(scratch.reserve(scratch_bytes), "allocating scratch");
  BENCH_CUDA(out.reserve(out_bytes), "allocating the result");

  double first_median = 0, prev_median = 0;
  for (int step = 0; step < 8; step++) {
    /* Kernels 1..7, then fast for comparison. */
    int k = step < 7 ? step + 1 : IMGSTAT_KERNEL_FAST;
    char name[32];
    if (k == IMGSTAT_KERNEL_FAST)
      copy_text(name, "fast");
    else
      copy_text(name, "kernel %d", k);
    imgstat_bench_row *row;
    BENCH_TRY(add_row(b, IMGSTAT_BENCH_LADDER, table, name, &row));
    row->kernel = k;
    row->block_size = k == IMGSTAT_KERNEL_FAST ? ist_fast_block_size() : block;
    row->elements = n;
    row->buffers = buffers;
    copy_text(row->note, "%s", note);

    BENCH_CUDA(cudaMemsetAsync(out.p, 0xA5, out_bytes, b->stream),
               "poisoning the result");
    timing t = timing();
    BENCH_TRY(time_runs(
        b, buffers, name,
        [&](int i) {
          size_t have = scratch_bytes;
          return run(k, i, scratch.p, &have, out.p);
        },
        &t));
    set_timing(b, row, t, bytes);
    if (step == 0)
      first_median = t.median_ms;
    row->step_speedup =
        step > 0 && t.median_ms > 0 ? prev_median / t.median_ms : 1.0;
    row->cum_speedup = t.median_ms > 0 ? first_median / t.median_ms : 0;
    prev_median = t.median_ms;
    BENCH_TRY(check(k, row, out.p));
  }
  return IMGSTAT_OK;
}

/*
 * Kernels 1..7 and fast summing n ints with `block` threads per block.
 * `buffers` copies of the input are rotated between runs (1: the same buffer
 * every run).
 */
imgstat_status bench_ladder_ints(bench *b, uint64_t n, int block, int buffers,
                                 const char *table, const char *note,
                                 const char *goal_text, double goal) {
  host_buffer h;
  if (!h.alloc(n * sizeof(int)))
    return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
  /* Full-range ints: a 32-bit accumulator anywhere would show. */
  fill_random_bytes(h.p, n * sizeof(int), 0xC0FFEE ^ n);
  long long expect = 0;
  const int *hi = h.as<int>();
  for (uint64_t i = 0; i < n; i++)
    expect += hi[i];

  ist_devbuf in[64];
  buffers = std::max(1, std::min(buffers, 64));
  for (int i = 0; i < buffers; i++) {
    BENCH_CUDA(in[i].reserve(n * sizeof(int)), "allocating the ladder input");
    BENCH_CUDA(
        cudaMemcpy(in[i].p, h.p, n * sizeof(int), cudaMemcpyHostToDevice),
        "uploading the ladder input");
  }
  return ladder_table(
      b, table, note, n, n * sizeof(int), block, buffers, sizeof(long long),
      [&](int k, size_t *need) {
        return ist_reduce_sum_i32(k, nullptr, n, block, nullptr, need, nullptr,
                                  b->stream);
      },
      [&](int k, int i, void *scratch, size_t *have, void *out) {
        return ist_reduce_sum_i32(k, in[i].as<int>(), n, block, scratch, have,
                                  static_cast<long long *>(out), b->stream);
      },
      [&](int k, imgstat_bench_row *row, const void *out) -> imgstat_status {
        long long got = 0;
        BENCH_CUDA(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost),
                   "reading the ladder's result");
        set_check(b, row, got == expect, "sum %lld, host %lld", got, expect);
        if (k == 7 && goal > 0)
          set_goal(row, goal, row->copy_fraction >= goal, goal_text);
        return IMGSTAT_OK;
      });
}

/* The ladder through the fused statistics on a u8 plane. */
imgstat_status bench_ladder_plane(bench *b, const void *d_plane, uint64_t n,
                                  const imgstat_partial &host,
                                  const char *table) {
  char note[IMGSTAT_BENCH_TEXT];
  if (n < 2 * b->res->l2_bytes)
    copy_text(note,
              "full statistics; input %.1f x the L2: runs may reuse some "
              "of it there",
              (double)n / (double)b->res->l2_bytes);
  else
    copy_text(note, "full statistics, input larger than L2");
  return ladder_table(
      b, table, note, n, n, IMGSTAT_LADDER_BLOCK_DEFAULT, 1,
      sizeof(imgstat_partial),
      [&](int k, size_t *need) {
        return ist_reduce_stats(k, 0, nullptr, IMGSTAT_U8, n, 1, 0, nullptr,
                                need, nullptr, b->stream);
      },
      [&](int k, int, void *scratch, size_t *have, void *out) {
        return ist_reduce_stats(k, 0, d_plane, IMGSTAT_U8, n, 1, 0, scratch,
                                have, static_cast<imgstat_partial *>(out),
                                b->stream);
      },
      [&](int, imgstat_bench_row *row, const void *out) -> imgstat_status {
        imgstat_partial got;
        BENCH_CUDA(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost),
                   "reading the statistics");
        char why[IMGSTAT_BENCH_TEXT];
        if (partials_agree(got, host, IMGSTAT_U8, why, sizeof why))
          set_check(b, row, true, "partial equals the host's");
        else
          set_check(b, row, false, "%s", why);
        return IMGSTAT_OK;
      });
}

/* ---- 3. fused statistics vs CUB, 4. NPP --------------------------------- */

/* cub::DeviceReduce::Sum of n items of T into one Acc, with 32-bit item
 * counts where they fit (CUB's fastest dispatch). */
template <typename T, typename Acc>
cudaError_t cub_sum(void *d_temp, size_t &temp_bytes, const T *d_in, Acc *d_out,
                    uint64_t n, cudaStream_t s) {
  if (d_temp) { /* a run, not the size query */
    cudaError_t e = ist_cuda_launch_gate();
    if (e != cudaSuccess)
      return e;
  }
  if (n <= (uint64_t)INT_MAX)
    return cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, (int)n, s);
  return cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, (long long)n,
                                s);
}

/* Times CUB's Sum over n items of T at d_in and checks it against `expect`
 * (exact for integers, 1e-9 relative for the double sum of floats: CUB is
 * not imgstat and sums in its own order). */
template <typename T, typename Acc>
imgstat_status bench_cub_row(bench *b, const char *table, const char *name,
                             const char *note, const T *d_in, uint64_t n,
                             Acc expect, imgstat_bench_row **out_row) {
  size_t temp_bytes = 0;
  BENCH_CUDA((cub_sum<T, Acc>(nullptr, temp_bytes, d_in, (Acc *)nullptr, n,
                              b->stream)),
             "sizing CUB's scratch");
  ist_devbuf temp, out;
  BENCH_CUDA(temp.reserve(temp_bytes), "allocating CUB's scratch");
  BENCH_CUDA(out.reserve(sizeof(Acc)), "allocating CUB's result");
  imgstat_bench_row *row;
  BENCH_TRY(add_row(b, IMGSTAT_BENCH_CUB, table, name, &row));
  row->elements = n;
  copy_text(row->note, "%s", note);
  timing t = timing();
  BENCH_TRY(time_runs(
      b, 1, name,
      [&](int) {
        size_t tb = temp_bytes;
        return cub_sum<T, Acc>(temp.p, tb, d_in, out.as<Acc>(), n, b->stream);
      },
      &t));
  set_timing(b, row, t, n * sizeof(T));
  Acc got;
  BENCH_CUDA(cudaMemcpy(&got, out.p, sizeof got, cudaMemcpyDeviceToHost),
             "reading CUB's sum");
  bool ok = (double)got == (double)expect ||
            (std::is_floating_point<Acc>::value &&
             close_rel((double)got, (double)expect, 1e-9));
  set_check(b, row, ok, "sum %.17g, host %.17g", (double)got, (double)expect);
  *out_row = row;
  return IMGSTAT_OK;
}

#ifdef IMGSTAT_HAVE_NPP
/* NPP's minimum and maximum of the interleaved RGB8 image, then its mean and
 * standard deviation channel by channel, against our fused statistics. */
imgstat_status bench_npp(bench *b, const unsigned char *h_planes, uint32_t w,
                         uint32_t h, const imgstat_partial host[3],
                         double fused_ms, const char *table) {
  size_t n = (size_t)w * h;
  host_buffer hi;
  if (!hi.alloc(3 * n))
    return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
  unsigned char *p = hi.as<unsigned char>();
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++)
      p[3 * i + c] = h_planes[c * n + i];
  ist_devbuf img;
  BENCH_CUDA(img.reserve(3 * n), "allocating NPP's image");
  BENCH_CUDA(cudaMemcpy(img.p, p, 3 * n, cudaMemcpyHostToDevice),
             "uploading NPP's image");

  cudaDeviceProp prop;
  int dev = 0;
  BENCH_CUDA(cudaGetDevice(&dev), "cudaGetDevice");
  BENCH_CUDA(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  NppStreamContext ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.hStream = b->stream;
  ctx.nCudaDeviceId = dev;
  ctx.nMultiProcessorCount = prop.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = prop.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = prop.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = prop.minor;
  BENCH_CUDA(cudaStreamGetFlags(b->stream, &ctx.nStreamFlags),
             "cudaStreamGetFlags");

  NppiSize roi = {(int)w, (int)h};
  int step = (int)(3 * w);
  size_t minmax_bytes = 0, meanstd_bytes = 0;
  NppStatus ns =
      nppiMinMaxGetBufferHostSize_8u_C3R_Ctx(roi, &minmax_bytes, ctx);
  if (ns == NPP_SUCCESS)
    ns = nppiMeanStdDevGetBufferHostSize_8u_C3CR_Ctx(roi, &meanstd_bytes, ctx);
  if (ns != NPP_SUCCESS)
    return imgstat_error_set(b->err, IMGSTAT_ERR_DEVICE,
                             "NPP buffer size query failed (NppStatus %d)",
                             (int)ns);
  ist_devbuf buf, res;
  BENCH_CUDA(buf.reserve(std::max(minmax_bytes, meanstd_bytes)),
             "allocating NPP's scratch");
  /* Results in device memory: 3 min, 3 max (bytes), then 3 means and 3
   * standard deviations (doubles). */
  BENCH_CUDA(res.reserve(64 + 6 * sizeof(double)), "allocating NPP's results");
  Npp8u *d_min = res.as<Npp8u>(), *d_max = d_min + 8;
  Npp64f *d_mean = reinterpret_cast<Npp64f *>(res.as<unsigned char>() + 64);
  Npp64f *d_std = d_mean + 3;

  imgstat_bench_row *row;
  BENCH_TRY(add_row(b, IMGSTAT_BENCH_NPP, table,
                    "NPP MinMax_8u_C3R + 3 x Mean_StdDev_8u_C3CR", &row));
  row->elements = 3 * n;
  copy_text(row->note, "interleaved RGB8, 4 calls (_Ctx), same pixels");
  NppStatus last = NPP_SUCCESS;
  timing t = timing();
  BENCH_TRY(time_runs(
      b, 1, "NPP statistics",
      [&](int) -> cudaError_t {
        last = nppiMinMax_8u_C3R_Ctx(img.as<Npp8u>(), step, roi, d_min, d_max,
                                     buf.as<Npp8u>(), ctx);
        for (int c = 1; c <= 3 && last == NPP_SUCCESS; c++)
          last = nppiMean_StdDev_8u_C3CR_Ctx(img.as<Npp8u>(), step, roi, c,
                                             buf.as<Npp8u>(), d_mean + c - 1,
                                             d_std + c - 1, ctx);
        return last == NPP_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
      },
      &t));
  if (last != NPP_SUCCESS)
    return imgstat_error_set(b->err, IMGSTAT_ERR_DEVICE,
                             "NPP statistics failed (NppStatus %d)", (int)last);
  set_timing(b, row, t, 3 * n);
  row->ratio = fused_ms > 0 ? t.median_ms / fused_ms : 0;
  set_goal(row, 10.0, row->ratio >= 10.0, "NPP time >= 10 x fused RGB8");

  unsigned char mn[8], mx[8];
  double mean[3], sd[3];
  BENCH_CUDA(cudaMemcpy(mn, d_min, 8, cudaMemcpyDeviceToHost), "NPP results");
  BENCH_CUDA(cudaMemcpy(mx, d_max, 8, cudaMemcpyDeviceToHost), "NPP results");
  BENCH_CUDA(cudaMemcpy(mean, d_mean, sizeof mean, cudaMemcpyDeviceToHost),
             "NPP results");
  BENCH_CUDA(cudaMemcpy(sd, d_std, sizeof sd, cudaMemcpyDeviceToHost),
             "NPP results");
  /* NPP is not imgstat: its mean and deviation round its own way, so they
   * agree with the host's to a tolerance, not to the bit
   * (imgstat_partial_same is the rule between imgstat's backends). */
  const double npp_mean_tol = 1e-6, npp_std_tol = 1e-4;
  for (int c = 0; c < 3; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&host[c], IMGSTAT_U8, w, 0, &f);
    bool ok = mn[c] == host[c].min && mx[c] == host[c].max &&
              close_rel(mean[c], f.mean, npp_mean_tol) &&
              close_rel(sd[c], f.std, npp_std_tol);
    if (!ok) {
      set_check(b, row, false,
                "channel %d: min %d max %d mean %.9g std %.9g vs host %g %g "
                "%.9g %.9g",
                c, mn[c], mx[c], mean[c], sd[c], host[c].min, host[c].max,
                f.mean, f.std);
      return IMGSTAT_OK;
    }
  }
  set_check(b, row, true, "min, max, mean, std (population) match the host");
  return IMGSTAT_OK;
}
#endif

struct image_kind {
  const char *name;
  int channels;
  imgstat_sample sample;
  bool full_range; /* integer samples may take the type's bounds */
};

/*
 * Integer samples in 1 .. max-1: random, yet no thread ever holds both
 * bounds of the type, so a kernel that stops tracking min/max once they are
 * reached (a shortcut real photos rarely allow everywhere) is timed doing the
 * whole job. The full-range row shows what that shortcut gains.
 */
void avoid_bounds(void *p, size_t bytes, imgstat_sample sample) {
  if (sample == IMGSTAT_U8) {
    unsigned char *q = static_cast<unsigned char *>(p);
    for (size_t i = 0; i < bytes; i++)
      q[i] = (unsigned char)(1 + q[i] % 254);
  } else if (sample == IMGSTAT_U16) {
    uint16_t *q = static_cast<uint16_t *>(p);
    for (size_t i = 0; i < bytes / 2; i++)
      q[i] = (uint16_t)(1 + q[i] % 65534);
  }
}

imgstat_status bench_images(bench *b) {
  static const image_kind kinds[] = {{"RGB8", 3, IMGSTAT_U8, false},
                                     {"RGBA8", 4, IMGSTAT_U8, false},
                                     {"RGB16", 3, IMGSTAT_U16, false},
                                     {"RGB float", 3, IMGSTAT_F32, false},
                                     {"RGB8", 3, IMGSTAT_U8, true}};
  uint32_t w = b->width, h = b->height;
  uint64_t n = (uint64_t)w * h;
  char mp[32];
  imgstat_number_snprintf(mp, sizeof mp, "%.0f MP", (double)n / (1 << 20));

  for (const image_kind &kind : kinds) {
    size_t ss = (size_t)kind.sample;
    size_t bytes = (size_t)kind.channels * n * ss;
    host_buffer hb;
    if (!hb.alloc(bytes))
      return imgstat_error_set(b->err, IMGSTAT_ERR_NOMEM, "out of host memory");
    if (kind.sample == IMGSTAT_F32)
      fill_random_floats(hb.as<float>(), bytes / 4, 0xF10A7 + n);
    else
      fill_random_bytes(hb.p, bytes, 0xB17E5 + 31 * kind.channels + ss + n);
    if (!kind.full_range)
      avoid_bounds(hb.p, bytes, kind.sample);
    imgstat_partial host[IMGSTAT_MAX_CHANNELS];
    BENCH_TRY(host_partials(b, hb.p, w, h, kind.channels, kind.sample, host));

    ist_devbuf img;
    BENCH_CUDA(img.reserve(bytes), "allocating the image");
    BENCH_CUDA(cudaMemcpy(img.p, hb.p, bytes, cudaMemcpyHostToDevice),
               "uploading the image");

    char size_text[32], table[IMGSTAT_BENCH_TEXT];
    mib_text(size_text, sizeof size_text, bytes);

    /* The ladder through the fused statistics, on the first u8 plane. */
    if (kind.sample == IMGSTAT_U8 && kind.channels == 3 && !kind.full_range) {
      char plane_text[32];
      mib_text(plane_text, sizeof plane_text, n);
      copy_text(table, "ladder: fused statistics of a %u x %u u8 plane (%s)", w,
                h, plane_text);
      BENCH_TRY(bench_ladder_plane(b, img.p, n, host[0], table));
    }

    const char *range = kind.sample == IMGSTAT_F32 ? "floats in [0, 1)"
                        : kind.full_range          ? "samples 0..max"
                                                   : "samples 1..max-1";
    copy_text(table, "fused vs cub::DeviceReduce::Sum: %s, %ux%u (%s), %s, %s",
              kind.name, w, h, mp, size_text, range);

    /* CUB first: the fused row's ratio needs its times. */
    imgstat_bench_row *cub_native = nullptr, *cub_words = nullptr;
    uint64_t items = (uint64_t)kind.channels * n;
    if (kind.sample == IMGSTAT_F32) {
      double expect = 0;
      const float *f = hb.as<float>();
      for (uint64_t i = 0; i < items; i++)
        expect += f[i];
      BENCH_TRY(bench_cub_row<float, double>(
          b, table, "cub Sum float -> double",
          "the same bytes as float items, double accumulator", img.as<float>(),
          items, expect, &cub_native));
    } else {
      unsigned long long expect = 0;
      for (int c = 0; c < kind.channels; c++)
        expect += host[c].sum;
      if (kind.sample == IMGSTAT_U8)
        BENCH_TRY(bench_cub_row<unsigned char, unsigned long long>(
            b, table, "cub Sum u8 -> u64",
            "the same bytes as uint8 items, uint64 accumulator",
            img.as<unsigned char>(), items, expect, &cub_native));
      else
        BENCH_TRY(bench_cub_row<unsigned short, unsigned long long>(
            b, table, "cub Sum u16 -> u64",
            "the same bytes as uint16 items, uint64 accumulator",
            img.as<unsigned short>(), items, expect, &cub_native));
    }
    {
      unsigned long long expect = 0;
      const uint32_t *words = hb.as<uint32_t>();
      for (size_t i = 0; i < bytes / 4; i++)
        expect += words[i];
      BENCH_TRY(bench_cub_row<uint32_t, unsigned long long>(
          b, table, "cub Sum u32 words -> u64",
          "the same bytes as uint32 items, uint64 accumulator",
          img.as<uint32_t>(), bytes / 4, expect, &cub_words));
    }

    size_t scratch_bytes = 0;
    BENCH_CUDA(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, nullptr, kind.sample, n,
                                (uint32_t)kind.channels, 0, nullptr,
                                &scratch_bytes, nullptr, b->stream),
               "sizing the statistics' scratch");
    ist_devbuf scratch, out;
    BENCH_CUDA(scratch.reserve(scratch_bytes), "allocating scratch");
    BENCH_CUDA(out.reserve(IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial)),
               "allocating the result");
    BENCH_CUDA(cudaMemsetAsync(out.p, 0xA5,
                               IMGSTAT_MAX_CHANNELS * sizeof(imgstat_partial),
                               b->stream),
               "poisoning the result");
    char name[48];
    copy_text(name, "fast (fused statistics)");
    imgstat_bench_row *row;
    BENCH_TRY(add_row(b, IMGSTAT_BENCH_FUSED, table, name, &row));
    row->kernel = IMGSTAT_KERNEL_FAST;
    row->block_size = ist_fast_block_size();
    row->elements = items;
    copy_text(row->note, "per plane: count, min, max + first index, %s",
              kind.sample == IMGSTAT_F32 ? "mean, M2, NaN/Inf counts"
                                         : "sum, sum of squares");
    timing t = timing();
    BENCH_TRY(time_runs(
        b, 1, name,
        [&](int) {
          size_t sb = scratch_bytes;
          return ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, img.p, kind.sample, n,
                                  (uint32_t)kind.channels, 0, scratch.p, &sb,
                                  out.as<imgstat_partial>(), b->stream);
        },
        &t));
    set_timing(b, row, t, bytes);
    double best_cub = std::min(cub_native->median_ms, cub_words->median_ms);
    row->ratio = best_cub > 0 ? t.median_ms / best_cub : 0;
    cub_native->ratio =
        cub_native->median_ms > 0 ? t.median_ms / cub_native->median_ms : 0;
    cub_words->ratio =
        cub_words->median_ms > 0 ? t.median_ms / cub_words->median_ms : 0;
    /* The goal is judged against each CUB row: the same samples (what the
     * issue names), and the same bytes as words (CUB's fastest sum of them,
     * the stricter bar). */
    if (!kind.full_range) {
      set_goal(cub_native, 1.10, cub_native->ratio <= 1.10,
               "fused <= 1.10 x CUB over the same samples");
      set_goal(cub_words, 1.10, cub_words->ratio <= 1.10,
               "fused <= 1.10 x CUB over the same bytes as u32 words");
    }

    imgstat_partial got[IMGSTAT_MAX_CHANNELS];
    BENCH_CUDA(cudaMemcpy(got, out.p, kind.channels * sizeof(imgstat_partial),
                          cudaMemcpyDeviceToHost),
               "reading the statistics");
    bool ok = true;
    char why[IMGSTAT_BENCH_TEXT] = "";
    for (int c = 0; c < kind.channels && ok; c++) {
      char one[IMGSTAT_BENCH_TEXT];
      if (!partials_agree(got[c], host[c], kind.sample, one, sizeof one)) {
        ok = false;
        snprintf(why, sizeof why, "channel %d: %.70s", c, one);
      }
    }
    if (ok)
      set_check(b, row, true, "%d partials equal the host's%s", kind.channels,
                kind.sample == IMGSTAT_F32 ? " (mean, M2 to the bit)" : "");
    else
      set_check(b, row, false, "%s", why);

#ifdef IMGSTAT_HAVE_NPP
    if (kind.sample == IMGSTAT_U8 && kind.channels == 3 && !kind.full_range &&
        !b->skip_npp) {
      copy_text(table, "NPP vs fused statistics: RGB8, %u x %u (%s)", w, h, mp);
      img.release();
      BENCH_TRY(
          bench_npp(b, hb.as<unsigned char>(), w, h, host, t.median_ms, table));
    }
#endif
  }
  return IMGSTAT_OK;
}

imgstat_status bench_all(bench *b) {
  imgstat_bench_result *r = b->res;
  char table[IMGSTAT_BENCH_TEXT], note[IMGSTAT_BENCH_TEXT], count[32],
      size_text[32];

  BENCH_TRY(bench_copy(b));

  /* Table 1: the original study's size and block, once with the same buffer
   * every run (it fits in L2 on a current card), once rotating enough
   * buffers that each run reads from memory. */
  uint64_t n = b->small_ints;
  count_text(count, sizeof count, n);
  mib_text(size_text, sizeof size_text, n * 4);
  bool fits = n * 4 <= r->l2_bytes;
  copy_text(table, "ladder: %s int32 (%s), block %d, same buffer every run",
            count, size_text, b->small_block);
  if (fits)
    copy_text(note, "input fits in the %llu MiB L2: partly an L2 figure",
              (unsigned long long)(r->l2_bytes >> 20));
  else
    copy_text(note, "input larger than L2");
  BENCH_TRY(bench_ladder_ints(b, n, b->small_block, 1, table, note, "", 0));
  if (fits) {
    int buffers = (int)std::min<uint64_t>(64, (4 * r->l2_bytes) / (n * 4) + 1);
    char all[32];
    mib_text(all, sizeof all, (uint64_t)buffers * n * 4);
    copy_text(table, "ladder: %s int32 (%s), block %d, %d buffers rotated",
              count, size_text, b->small_block, buffers);
    copy_text(note, "%s in all, > 4 x L2: each run reads from memory", all);
    BENCH_TRY(
        bench_ladder_ints(b, n, b->small_block, buffers, table, note, "", 0));
  }

  /* Table 2: large enough that no cache helps; the goal of kernel 7. */
  n = b->large_ints;
  count_text(count, sizeof count, n);
  mib_text(size_text, sizeof size_text, n * 4);
  copy_text(table, "ladder: %s int32 (%s), block %d (default)", count,
            size_text, IMGSTAT_LADDER_BLOCK_DEFAULT);
  copy_text(note,
            n * 4 > r->l2_bytes ? "input larger than L2" : "input fits in L2");
  BENCH_TRY(bench_ladder_ints(b, n, 0, 1, table, note,
                              "kernel 7 >= 80% of the copy bandwidth", 0.80));

  /* Table 3 (the u8 plane), the images against CUB, and NPP. */
  return bench_images(b);
}

} // namespace

extern "C" imgstat_status imgstat_bench_run(const imgstat_bench_options *opts,
                                            imgstat_bench_result *out,
                                            imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no result to fill");
  memset(out, 0, sizeof *out);
  imgstat_bench_options o;
  memset(&o, 0, sizeof o);
  if (opts)
    o = *opts;
  if (o.runs < 0 || o.warmup < 0 || o.device < 0 || o.small_block < 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "negative runs, warm-up, device or block size");

  bench b;
  b.res = out;
  b.err = err;
  b.quick = o.quick;
  b.runs = o.runs ? o.runs : (o.quick ? 5 : 20);
  b.warmup = o.warmup ? o.warmup : 2;
  b.copy_bytes = o.copy_bytes
                     ? o.copy_bytes
                     : (o.quick ? UINT64_C(64) << 20 : UINT64_C(1) << 30);
  b.small_ints = o.small_ints
                     ? o.small_ints
                     : (o.quick ? UINT64_C(1) << 20 : UINT64_C(1) << 22);
  b.large_ints = o.large_ints
                     ? o.large_ints
                     : (o.quick ? UINT64_C(1) << 22 : UINT64_C(1) << 26);
  b.width = o.image_width ? o.image_width : (o.quick ? 2048 : 8192);
  b.height = o.image_height ? o.image_height : b.width;
  b.small_block = o.small_block ? o.small_block : 128;
  b.skip_npp = o.skip_npp;
  if (b.copy_bytes < 8 || b.small_ints == 0 || b.large_ints == 0 ||
      (uint64_t)b.width * b.height > (UINT64_C(1) << 31))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "benchmark sizes out of range (copy >= 8 bytes, "
                             "ints >= 1, image <= 2^31 pixels)");
  out->runs = b.runs;
  out->warmup = b.warmup;
  out->quick = b.quick;
#ifdef IMGSTAT_HAVE_NPP
  out->have_npp = !b.skip_npp;
#endif

  /* The first CUDA call creates the context: the start-up cost. */
  double t0 = host_ms_now();
  cudaError_t e = cudaSetDevice(o.device);
  if (e == cudaSuccess)
    e = cudaFree(nullptr);
  out->init_ms = host_ms_now() - t0;
  if (e != cudaSuccess)
    return ist_cuda_fail(err, e, "CUDA start-up");

  cudaDeviceProp prop;
  if ((e = cudaGetDeviceProperties(&prop, o.device)) != cudaSuccess)
    return ist_cuda_fail(err, e, "cudaGetDeviceProperties");
  snprintf(out->device, sizeof out->device, "%.80s (sm_%d%d)", prop.name,
           prop.major, prop.minor);
  out->sm_count = prop.multiProcessorCount;
  out->l2_bytes = (uint64_t)prop.l2CacheSize;
  out->memory_bytes = (uint64_t)prop.totalGlobalMem;
  cudaRuntimeGetVersion(&out->runtime_version);
  cudaDriverGetVersion(&out->driver_version);

  if ((e = cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking)) !=
      cudaSuccess)
    return ist_cuda_fail(err, e, "cudaStreamCreate");
  int nev = 2 * (b.runs + 1);
  b.events = static_cast<cudaEvent_t *>(calloc(nev, sizeof(cudaEvent_t)));
  b.samples = static_cast<double *>(calloc(b.runs, sizeof(double)));
  if (!b.events || !b.samples)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of host memory");
  for (int i = 0; i < nev; i++)
    if ((e = cudaEventCreate(&b.events[i])) != cudaSuccess)
      return ist_cuda_fail(err, e, "cudaEventCreate");
  if ((e = cudaEventCreateWithFlags(&b.hold_done, cudaEventDisableTiming)) !=
      cudaSuccess)
    return ist_cuda_fail(err, e, "cudaEventCreate");

  return bench_all(&b);
}
