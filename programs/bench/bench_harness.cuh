/*
 * The harness of `imgstat bench` (bench.cu, bench_images.cu): the
 * benchmark's state, the timing of one row by the method bench.cu states,
 * the rows' fields, random inputs, and the comparisons with the host.
 * Private to the benchmark.
 */
#ifndef IMGSTAT_BENCH_HARNESS_CUH
#define IMGSTAT_BENCH_HARNESS_CUH

#include "bench.h"
#include "cuda_check.cuh"
#include "reduce.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ist_bench {

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

inline void fill_random_bytes(void *dst, size_t bytes, uint64_t seed) {
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
inline void fill_random_floats(float *dst, size_t n, uint64_t seed) {
  rng r(seed);
  for (size_t i = 0; i < n; i += 2) {
    uint64_t v = r.next();
    dst[i] = (float)(v >> 40) * (1.0f / 16777216.0f);
    if (i + 1 < n)
      dst[i + 1] = (float)((v >> 8) & 0xFFFFFF) * (1.0f / 16777216.0f);
  }
}

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
/* Holds the stream (a kernel that waits) until the host has queued the
 * timed runs, then records b->hold_done behind it. */
imgstat_status hold_stream(bench *b, const char *what);

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

  BENCH_TRY(hold_stream(b, what));
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
imgstat_status add_row(bench *b, imgstat_bench_group group, const char *table,
                       const char *name, imgstat_bench_row **out);
/* Fills the row's times and the figures derived from them. */
void set_timing(bench *b, imgstat_bench_row *row, const timing &t,
                uint64_t bytes);
void set_check(bench *b, imgstat_bench_row *row, bool ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void set_goal(imgstat_bench_row *row, double goal, bool met, const char *text);
/* "2^22" for powers of two, else the number. */
void count_text(char *buf, size_t size, uint64_t n);
void mib_text(char *buf, size_t size, uint64_t bytes);

/* ---- comparisons with the host ------------------------------------------ */

bool close_rel(double a, double b, double tol);
/* Compares a device partial with the host's: every field exactly, float mean
 * and M2 to the bit (the canonical float order, imgstat_cuda.h's promise). */
bool partials_agree(const imgstat_partial &g, const imgstat_partial &c,
                    imgstat_sample sample, char *why, size_t size);
/* Host reference partials of `channels` planes of w x h samples. */
imgstat_status host_partials(bench *b, void *h_planes, uint32_t w, uint32_t h,
                             int channels, imgstat_sample sample,
                             imgstat_partial *out);

/* ---- the rows, by what they measure -------------------------------------- */

/* The ladder through the fused statistics on a u8 plane (bench.cu). */
imgstat_status bench_ladder_plane(bench *b, const void *d_plane, uint64_t n,
                                  const imgstat_partial &host,
                                  const char *table);
/* The ladder on the first u8 plane, the fused statistics of each image kind
 * against CUB, and NPP (bench_images.cu). */
imgstat_status bench_images(bench *b);

} // namespace ist_bench

#endif /* IMGSTAT_BENCH_HARNESS_CUH */
