/*
 * Where a synchronous statistics call on a device image spends its time
 * beyond the kernel (the goal: "within 1.2 x the CLI's kernel time"),
 * below Python: the library's calls one by one against CUDA's own floors.
 * Host wall time (steady_clock) of each step, the device idle before each
 * (cudaDeviceSynchronize), every step once a round in turn, medians over
 * the rounds (the 64 MP ones every 4th round); the kernel time as
 * `imgstat bench` takes it (CUDA events around ist_reduce_stats, the runs
 * queued back to back). 64 MP RGB8 CHW, samples 1..254, and 3 samples.
 * Built by bench/gpu/python_cuda.sh (step callcost) against the library
 * of its libtest build; not part of the CMake build.
 */
#include "imgstat/cuda.h"
#include "reduce.cuh"

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "harness_check.h"
#define OK(x)                                                                  \
  do {                                                                         \
    if ((x) != IMGSTAT_OK) {                                                   \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, err.message);  \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

__global__ void fill_kernel(unsigned char *p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = (unsigned char)(1 + x % 254); /* 1..254 */
  }
}

__global__ void empty_kernel() {}

int main() {
  imgstat_error err = {};
  imgstat_gpu *gpu = nullptr;
  OK(imgstat_gpu_create(0, &gpu, &err));
  const uint32_t W = 8192, H = 8192;
  const uint64_t n = (uint64_t)W * H;
  unsigned char *big = nullptr, *tiny = nullptr;
  CHECK(cudaMalloc(&big, 3 * n));
  CHECK(cudaMalloc(&tiny, 256));
  fill_kernel<<<1024, 256>>>(big, 3 * n);
  fill_kernel<<<1, 32>>>(tiny, 3);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  size_t sb = 0;
  CHECK(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, nullptr, IMGSTAT_U8, n, 3, 0,
                         nullptr, &sb, nullptr, s));
  void *scratch = nullptr;
  CHECK(cudaMalloc(&scratch, sb));
  imgstat_partial *h_out = nullptr;
  CHECK(cudaMallocHost(&h_out, 4 * sizeof(imgstat_partial)));

  /* the kernel time, as imgstat bench takes it */
  const int runs = 50;
  std::vector<cudaEvent_t> ev(2 * runs);
  for (auto &e : ev)
    CHECK(cudaEventCreate(&e));
  for (int i = 0; i < 5; i++) {
    size_t b = sb;
    CHECK(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, big, IMGSTAT_U8, n, 3, 0,
                           scratch, &b, h_out, s));
  }
  for (int i = 0; i < runs; i++) {
    size_t b = sb;
    CHECK(cudaEventRecord(ev[2 * i], s));
    CHECK(ist_reduce_stats(IMGSTAT_KERNEL_FAST, 0, big, IMGSTAT_U8, n, 3, 0,
                           scratch, &b, h_out, s));
    CHECK(cudaEventRecord(ev[2 * i + 1], s));
  }
  CHECK(cudaStreamSynchronize(s));
  std::vector<double> k;
  for (int i = 0; i < runs; i++) {
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    k.push_back(ms * 1e3);
  }
  std::sort(k.begin(), k.end());
  const double kernel_us = k[runs / 2];
  printf("callcost | kernel (events, %d queued runs), 64 MP CHW | %.1f us\n",
         runs, kernel_us);

  /* Every variant once per round, in turn (so that the host's and the
   * device's passing state moves them all alike): medians over the rounds. */
  struct Variant {
    const char *name;
    int every; /* runs in rounds r % every == 0 (the 64 MP ones: 1 of 4) */
    std::function<void()> f;
    std::vector<double> t;
  };
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_gpu_image *d_tiny = nullptr, *d_big = nullptr;
  OK(imgstat_gpu_image_wrap_strided(gpu, 1, 1, 3, IMGSTAT_U8, tiny, 1, 1, 1,
                                    &d_tiny, &err));
  OK(imgstat_gpu_image_wrap_strided(gpu, W, H, 3, IMGSTAT_U8, big, W, 1, n,
                                    &d_big, &err));
  imgstat_gpu_image *d_big_on = nullptr; /* on raw's stream */
  OK(imgstat_gpu_image_wrap_on(gpu, W, H, 3, IMGSTAT_U8, big, W, 1, n,
                               (uintptr_t)s, &d_big_on, &err));
  auto call = [&](const unsigned char *p, uint32_t w, uint32_t h) {
    imgstat_gpu_image *d = nullptr;
    OK(imgstat_gpu_wait_stream(gpu, 1, &err));
    OK(imgstat_gpu_image_wrap_strided(gpu, w, h, 3, IMGSTAT_U8, p, w, 1,
                                      (size_t)w * h, &d, &err));
    OK(imgstat_gpu_image_stats(gpu, d, IMGSTAT_KERNEL_FAST, out, &err));
    imgstat_gpu_image_release(gpu, d);
  };
  auto call_on = [&](const unsigned char *p, uint32_t w, uint32_t h,
                     uintptr_t on = 1) {
    imgstat_gpu_image *d = nullptr;
    OK(imgstat_gpu_image_wrap_on(gpu, w, h, 3, IMGSTAT_U8, p, w, 1,
                                 (size_t)w * h, on, &d, &err));
    OK(imgstat_gpu_image_stats(gpu, d, IMGSTAT_KERNEL_FAST, out, &err));
    imgstat_gpu_image_release(gpu, d);
  };
  auto raw = [&](const void *p, uint64_t len, bool size_first) {
    size_t b = sb;
    if (size_first) { /* what the library's path adds before the launch */
      size_t q = 0;
      CHECK(ist_reduce_stats_pitched(IMGSTAT_KERNEL_FAST, p, len, IMGSTAT_U8,
                                     len, 3, nullptr, &q, nullptr, s));
    }
    CHECK(ist_reduce_stats_pitched(IMGSTAT_KERNEL_FAST, p, len, IMGSTAT_U8, len,
                                   3, scratch, &b, h_out, s));
    CHECK(cudaStreamSynchronize(s));
  };
  /* the device time between events on raw's stream around fn (its own
   * synchronization inside), kept apart from the host clock's rows */
  std::vector<double> dev[2];
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  auto dev_time = [&](int k, const std::function<void()> &fn) {
    CHECK(cudaEventRecord(e0, s));
    fn();
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    dev[k].push_back(ms * 1e3);
  };
  std::vector<Variant> vs = {
      {"empty kernel, launch + cudaStreamSynchronize", 1,
       [&] {
         empty_kernel<<<1, 32, 0, s>>>();
         CHECK(cudaStreamSynchronize(s));
       }},
      {"two empty kernels + cudaStreamSynchronize", 1,
       [&] {
         empty_kernel<<<1, 32, 0, s>>>();
         empty_kernel<<<1, 32, 0, s>>>();
         CHECK(cudaStreamSynchronize(s));
       }},
      {"cudaStreamSynchronize(cudaStreamLegacy), idle", 1,
       [&] { CHECK(cudaStreamSynchronize(cudaStreamLegacy)); }},
      {"cudaPointerGetAttributes", 1,
       [&] {
         cudaPointerAttributes a;
         CHECK(cudaPointerGetAttributes(&a, big));
       }},
      {"cudaDeviceGetAttribute(multiprocessors)", 1,
       [&] {
         int v;
         CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
       }},
      {"library: imgstat_gpu_wait_stream(1)", 1,
       [&] { OK(imgstat_gpu_wait_stream(gpu, 1, &err)); }},
      {"library: wrap_strided + release, 64 MP CHW", 1,
       [&] {
         imgstat_gpu_image *d = nullptr;
         OK(imgstat_gpu_image_wrap_strided(gpu, W, H, 3, IMGSTAT_U8, big, W, 1,
                                           n, &d, &err));
         imgstat_gpu_image_release(gpu, d);
       }},
      {"raw: reduce_stats_pitched + sync, 3 samples", 1,
       [&] { raw(tiny, 1, false); }},
      {"library: image_stats, 3 samples", 1,
       [&] {
         OK(imgstat_gpu_image_stats(gpu, d_tiny, IMGSTAT_KERNEL_FAST, out,
                                    &err));
       }},
      {"library: wait + wrap + stats + release, 3 samples", 1,
       [&] { call(tiny, 1, 1); }},
      {"library: wrap_on(legacy stream) + stats + release, 3 samples", 1,
       [&] { call_on(tiny, 1, 1); }},
      {"raw: reduce_stats_pitched + sync, 64 MP CHW", 4,
       [&] { raw(big, n, false); }},
      {"raw, sized first: 64 MP CHW", 4, [&] { raw(big, n, true); }},
      {"library: image_stats, 64 MP CHW", 4,
       [&] {
         OK(imgstat_gpu_image_stats(gpu, d_big, IMGSTAT_KERNEL_FAST, out,
                                    &err));
       }},
      {"library: wait + wrap + stats + release, 64 MP CHW", 4,
       [&] { call(big, W, H); }},
      {"library: wrap_on(legacy stream) + stats + release, 64 MP CHW", 4,
       [&] { call_on(big, W, H); }},
      {"library: wrap_on(raw's stream) + stats + release, 64 MP CHW", 4,
       [&] { call_on(big, W, H, (uintptr_t)s); }},
      {"library: image_stats on raw's stream, 64 MP CHW", 4,
       [&] {
         OK(imgstat_gpu_image_stats(gpu, d_big_on, IMGSTAT_KERNEL_FAST, out,
                                    &err));
       }},
      {"device: events around raw, 64 MP CHW", 4,
       [&] { dev_time(0, [&] { raw(big, n, false); }); }},
      {"device: events around the library on raw's stream, 64 MP CHW", 4,
       [&] { dev_time(1, [&] { call_on(big, W, H, (uintptr_t)s); }); }},
  };
  const int rounds = 400;
  for (int r = -8; r < rounds; r++)
    for (Variant &v : vs) {
      if (((r < 0 ? -r : r) % v.every) != 0)
        continue;
      CHECK(cudaDeviceSynchronize());
      auto a = std::chrono::steady_clock::now();
      v.f();
      auto b = std::chrono::steady_clock::now();
      if (r >= 0)
        v.t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
    }
  imgstat_gpu_image_release(gpu, d_tiny);
  imgstat_gpu_image_release(gpu, d_big);
  imgstat_gpu_image_release(gpu, d_big_on);
  for (int k = 0; k < 2; k++) {
    std::sort(dev[k].begin(), dev[k].end());
    printf("callcost | device time between events, %s, 64 MP CHW | %.2f us\n",
           k == 0 ? "raw" : "the library on raw's stream",
           dev[k][dev[k].size() / 2]);
  }
  for (Variant &v : vs) {
    std::sort(v.t.begin(), v.t.end());
    double med = v.t[v.t.size() / 2];
    printf("callcost | %s | %.2f us (%.3f x kernel; p10-p90 %.2f-%.2f; %zu "
           "runs)\n",
           v.name, med, med / kernel_us, v.t[v.t.size() / 10],
           v.t[v.t.size() * 9 / 10], v.t.size());
  }
  imgstat_gpu_destroy(gpu);
  return 0;
}
