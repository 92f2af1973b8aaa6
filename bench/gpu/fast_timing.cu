/*
 * Quick timing of the fused statistics kernel against cub::DeviceReduce::Sum
 * over the same bytes, and of the ladder, for docs/gpu.md. Built and run by
 * tests/gpu/checks/run_gpu.sh on the GPU machine (not part of the CMake build;
 * the full benchmark is `imgstat bench`). CUDA events, 3 warm-ups, median
 * of 30.
 */
#include "imgstat/cuda.h"
#include "reduce.cuh"

#include <chrono>

#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "harness_check.h"

__global__ void fill_kernel(unsigned *p, size_t n, unsigned seed, int f32) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    x *= 3266489917u;
    x ^= x >> 16;
    if (f32) /* finite floats in [1, 2) */
      x = 0x3f800000u | (x & 0x7fffffu);
    p[i] = x;
  }
}

template <typename F> double median_ms(F f, int runs = 30) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i)
    f();
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    CHECK(cudaEventRecord(a));
    f();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

static double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/* Median of interleaved runs of a and b (so that clock drift hits both). */
template <typename A, typename B>
void median_pair(A a, B b, double *ma, double *mb, int runs = 30) {
  cudaEvent_t e[3];
  for (auto &x : e)
    CHECK(cudaEventCreate(&x));
  for (int i = 0; i < 3; ++i) {
    a();
    b();
  }
  std::vector<float> ta, tb;
  for (int i = 0; i < runs; ++i) {
    CHECK(cudaEventRecord(e[0]));
    a();
    CHECK(cudaEventRecord(e[1]));
    b();
    CHECK(cudaEventRecord(e[2]));
    CHECK(cudaEventSynchronize(e[2]));
    float x, y;
    CHECK(cudaEventElapsedTime(&x, e[0], e[1]));
    CHECK(cudaEventElapsedTime(&y, e[1], e[2]));
    ta.push_back(x);
    tb.push_back(y);
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  *ma = ta[ta.size() / 2];
  *mb = tb[tb.size() / 2];
  for (auto &x : e)
    CHECK(cudaEventDestroy(x));
}

int main(int argc, char **argv) {
  const bool fused_only = argc > 1;
  /* The backend's start-up: CUDA initialisation, context, warm-up launches. */
  double t0 = now_ms();
  imgstat_gpu *gpu = nullptr;
  imgstat_error err;
  if (imgstat_gpu_create(-1, &gpu, &err) != IMGSTAT_OK) {
    printf("imgstat_gpu_create: %s\n", err.message);
    return 1;
  }
  printf("imgstat_gpu_create (first CUDA call of the process): %.1f ms\n",
         now_ms() - t0);
  const size_t w = 8192, h = 8192, n = w * h; /* 64 MP */
  const size_t max_bytes = n * 3 * 4 + 64;
  unsigned char *d_in;
  CHECK(cudaMalloc(&d_in, max_bytes));
  fill_kernel<<<1024, 256>>>((unsigned *)d_in, max_bytes / 4, 12345u, 0);
  CHECK(cudaGetLastError());
  void *d_scratch;
  size_t scratch_cap = 64 << 20;
  CHECK(cudaMalloc(&d_scratch, scratch_cap));
  imgstat_partial *d_out;
  CHECK(cudaMalloc(&d_out, 8 * sizeof(imgstat_partial)));
  unsigned long long *d_sum;
  CHECK(cudaMalloc(&d_sum, sizeof *d_sum));

  /* Bring the clocks up before anything is timed (~0.5 s of copies). */
  {
    double until = now_ms() + 500;
    while (now_ms() < until) {
      CHECK(cudaMemcpyAsync(d_in + max_bytes / 2, d_in, max_bytes / 2,
                            cudaMemcpyDeviceToDevice));
      CHECK(cudaDeviceSynchronize());
    }
  }
  /* Copy bandwidth: 1 GiB device to device. */
  if (!fused_only) {
    size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    double ms = median_ms(
        [&] { CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); },
        10);
    printf("copy 1 GiB d2d: %.3f ms, %.0f GB/s (read+write)\n", ms,
           2.0 * bytes / ms / 1e6);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
  }

  struct Case {
    const char *name;
    imgstat_sample s;
    int ch;
  } cases[] = {{"RGB8", IMGSTAT_U8, 3},
               {"RGBA8", IMGSTAT_U8, 4 /* 4 planes: fits max_bytes */},
               {"RGB16", IMGSTAT_U16, 3},
               {"RGBf32", IMGSTAT_F32, 3}};
  if (fused_only)
    printf("variant %s\n", argv[1]);
  printf("%-8s %10s %10s %10s %8s %10s\n", "image", "fused ms", "GB/s",
         "cub ms", "ratio", "per-plane");
  for (auto &c : cases) {
    size_t bytes = n * c.ch * (size_t)c.s;
    if (bytes > max_bytes)
      continue;
    fill_kernel<<<1024, 256>>>((unsigned *)d_in, bytes / 4, 777u,
                               c.s == IMGSTAT_F32);
    CHECK(cudaGetLastError());
    size_t sb = 0;
    CHECK(ist_reduce_stats(0, 0, nullptr, c.s, n, c.ch, 0, nullptr, &sb,
                           nullptr, 0));
    if (sb > scratch_cap) {
      printf("scratch too large\n");
      return 1;
    }
    double fused = 0, cub = 0;
    double per_plane = median_ms([&] {
      for (int k = 0; k < c.ch; ++k) {
        size_t b = scratch_cap;
        CHECK(ist_reduce_stats(0, 0, d_in + k * n * c.s, c.s, n, 1, 0,
                               d_scratch, &b, d_out + k, 0));
      }
    });
    size_t cub_bytes = 0;
    const unsigned *words = (const unsigned *)d_in;
    CHECK(cub::DeviceReduce::Sum(nullptr, cub_bytes, words, d_sum,
                                 (int64_t)(bytes / 4)));
    void *d_cub;
    CHECK(cudaMalloc(&d_cub, cub_bytes));
    median_pair(
        [&] {
          size_t b = scratch_cap;
          CHECK(ist_reduce_stats(0, 0, d_in, c.s, n, c.ch, 0, d_scratch, &b,
                                 d_out, 0));
        },
        [&] {
          CHECK(cub::DeviceReduce::Sum(d_cub, cub_bytes, words, d_sum,
                                       (int64_t)(bytes / 4)));
        },
        &fused, &cub);
    CHECK(cudaFree(d_cub));
    printf("%-8s %10.4f %10.0f %10.4f %8.3f %10.4f\n", c.name, fused,
           bytes / fused / 1e6, cub, fused / cub, per_plane);
  }

  if (fused_only) {
    double ms = median_ms([&] {
      size_t b = scratch_cap;
      CHECK(ist_reduce_stats(0, 0, d_in, IMGSTAT_U8, n, 1, 0, d_scratch, &b,
                             d_out, 0));
    });
    printf("%s: stats u8 64MP plane: k0 %.4f ms\n", argv[1], ms);
    return 0;
  }
  /* Ladder: ints at 2^22 (block 128) and 2^26 (block 256), and stats of a
   * 64 MP u8 plane. */
  int *d_ints = (int *)d_in;
  long long *d_ll = (long long *)d_sum;
  for (int table = 0; table < 2; ++table) {
    uint64_t ni = table == 0 ? (1u << 22) : (1u << 26);
    int block = table == 0 ? 128 : 256;
    printf("ints 2^%d block %d:", table == 0 ? 22 : 26, block);
    for (int k = 1; k <= 7; ++k) {
      double ms = median_ms([&] {
        size_t b = scratch_cap;
        CHECK(ist_reduce_sum_i32(k, d_ints, ni, block, d_scratch, &b, d_ll, 0));
      });
      printf(" k%d %.4f ms (%.0f GB/s)", k, ms, ni * 4.0 / ms / 1e6);
    }
    double ms = median_ms([&] {
      size_t b = scratch_cap;
      CHECK(ist_reduce_sum_i32(0, d_ints, ni, block, d_scratch, &b, d_ll, 0));
    });
    printf(" fast %.4f ms (%.0f GB/s)\n", ms, ni * 4.0 / ms / 1e6);
  }
  printf("stats u8 64MP plane:");
  for (int k = 0; k <= 7; ++k) {
    double ms = median_ms(
        [&] {
          size_t b = scratch_cap;
          CHECK(ist_reduce_stats(k, 0, d_in, IMGSTAT_U8, n, 1, 0, d_scratch, &b,
                                 d_out, 0));
        },
        k == 0 ? 30 : 5);
    printf(" k%d %.3f ms", k, ms);
  }
  printf("\n");

  /* The product path: a 64 MP RGB8 image in pageable host memory, uploaded
   * through the staging buffers and reduced (host clock, median of 5). */
  {
    imgstat_image img = {};
    img.width = (uint32_t)w;
    img.height = (uint32_t)h;
    img.channels = 3;
    img.sample = IMGSTAT_U8;
    img.data = malloc(n * 3);
    for (int c = 0; c < 3; ++c)
      img.planes[c] = (unsigned char *)img.data + c * n;
    for (size_t i = 0; i < n * 3; ++i)
      ((unsigned char *)img.data)[i] = (unsigned char)(i * 2654435761u >> 24);
    imgstat_partial out[IMGSTAT_MAX_CHANNELS];
    std::vector<double> t;
    for (int r = 0; r < 6; ++r) {
      double a = now_ms();
      if (imgstat_gpu_stats(gpu, &img, 0, out, &err) != IMGSTAT_OK) {
        printf("imgstat_gpu_stats: %s\n", err.message);
        return 1;
      }
      if (r > 0)
        t.push_back(now_ms() - a);
    }
    std::sort(t.begin(), t.end());
    printf("imgstat_gpu_stats 64 MP RGB8 from pageable memory: %.2f ms "
           "(%.1f GB/s)\n",
           t[2], n * 3 / t[2] / 1e6);
    free(img.data);
  }
  imgstat_gpu_destroy(gpu);
  return 0;
}
