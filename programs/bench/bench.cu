/*
 * `imgstat bench`: measures the device reductions on the present GPU and
 * fills an imgstat_bench_result (bench.h); programs/bench/bench_cmd.c prints
 * it. This file: the harness (bench_harness.cuh), the copy and the ladder;
 * bench_images.cu: the images' fused statistics against CUB and NPP. Part of
 * the program, not of the library: it calls the library's internal launchers
 * (reduce.cuh) directly.
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
#include "bench_harness.cuh"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace ist_bench {

namespace {

double host_ms_now() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(
             clock::now().time_since_epoch())
      .count();
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
} // namespace

imgstat_status hold_stream(bench *b, const char *what) {
  BENCH_CUDA(ist_cuda_launch_gate(), "hold kernel");
  bench_hold_kernel<<<1, 1, 0, b->stream>>>(kHoldNs + kHoldNsPerRun * b->runs);
  BENCH_CUDA(cudaGetLastError(), "hold kernel");
  BENCH_CUDA(cudaEventRecord(b->hold_done, b->stream), what);
  return IMGSTAT_OK;
}

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

imgstat_status host_partials(bench *b, void *h_planes, uint32_t w, uint32_t h,
                             int channels, imgstat_sample sample,
                             imgstat_partial *out) {
  size_t plane = (size_t)w * h * (size_t)sample;
  void *planes[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < channels; c++)
    planes[c] = static_cast<unsigned char *>(h_planes) + c * plane;
  imgstat_image img;
  imgstat_status st =
      imgstat_image_wrap(&img, w, h, channels, sample, planes, 0, b->err);
  if (st != IMGSTAT_OK)
    return st;
  img.format = "bench";
  return imgstat_cpu_stats(&img, 0, out, b->err);
}

namespace {

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
  imgstat_bench_row *row = nullptr;
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
    imgstat_bench_row *row = nullptr;
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

} // namespace

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

namespace {

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

} // namespace ist_bench

using ist_bench::bench;
using ist_bench::bench_all;
using ist_bench::host_ms_now;

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
