// The start-up and teardown costs behind `imgstat --jpeg-decoder gpu` on the
// GPU host, one phase at a time (wall milliseconds): CUDA's context,
// nvJPEG's handle on the hardware backend, its decode states (the first, a
// second on the same handle, then two more made at once on two threads: what
// the lanes of one device do), a second hardware handle (what a lane with
// handles of its own pays), the GPU-hybrid backend, then their destruction
// one by one. The last line is the time from main's start: the process's
// exit (CUDA's own teardown) is the whole process's wall time less it.
// Build and run (GPU host):
//   nvcc -O2 -std=c++17 -o /tmp/nvjpeg_startup tests/gpu/nvjpeg_startup.cu \
//     -lnvjpeg -lpthread
//   /tmp/nvjpeg_startup
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <thread>

static double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

#define PHASE(name, expr)                                                      \
  do {                                                                         \
    double t0 = now_ms();                                                      \
    int rc = (int)(expr);                                                      \
    printf("%-44s %8.1f ms (status %d)\n", name, now_ms() - t0, rc);           \
  } while (0)

int main() {
  const double start = now_ms();
  nvjpegHandle_t hw = nullptr, hw2 = nullptr, hy = nullptr;
  nvjpegJpegState_t s1 = nullptr, s2 = nullptr, s3 = nullptr, s4 = nullptr;
  nvjpegJpegState_t s5 = nullptr, shy = nullptr;
  PHASE("cudaFree(0): CUDA context", cudaFree(0));
  PHASE("nvjpegCreateEx hardware",
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw));
  PHASE("nvjpegJpegStateCreate hardware (first)",
        nvjpegJpegStateCreate(hw, &s1));
  PHASE("nvjpegJpegStateCreate hardware (second)",
        nvjpegJpegStateCreate(hw, &s2));
  {
    int r3 = -1, r4 = -1;
    double t0 = now_ms();
    std::thread a([&] { r3 = (int)nvjpegJpegStateCreate(hw, &s3); });
    std::thread b([&] { r4 = (int)nvjpegJpegStateCreate(hw, &s4); });
    a.join();
    b.join();
    printf("%-44s %8.1f ms (status %d %d)\n",
           "two states at once, one handle (threads)", now_ms() - t0, r3, r4);
  }
  PHASE("nvjpegDecodeBatchedInitialize hw 128",
        nvjpegDecodeBatchedInitialize(hw, s1, 128, 1, NVJPEG_OUTPUT_RGB));
  PHASE("nvjpegDecodeBatchedInitialize hw 22",
        nvjpegDecodeBatchedInitialize(hw, s1, 22, 1, NVJPEG_OUTPUT_RGB));
  PHASE("nvjpegCreateEx hardware (second handle)",
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw2));
  PHASE("nvjpegJpegStateCreate on the second handle",
        nvjpegJpegStateCreate(hw2, &s5));
  PHASE("nvjpegCreateEx GPU-hybrid",
        nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID, nullptr, nullptr, 0, &hy));
  PHASE("nvjpegJpegStateCreate GPU-hybrid", nvjpegJpegStateCreate(hy, &shy));
  const double setup = now_ms() - start;
  PHASE("nvjpegJpegStateDestroy hardware (first)", nvjpegJpegStateDestroy(s1));
  {
    int r2 = -1, r3 = -1;
    double t0 = now_ms();
    std::thread a([&] { r2 = (int)nvjpegJpegStateDestroy(s2); });
    std::thread b([&] { r3 = (int)nvjpegJpegStateDestroy(s3); });
    a.join();
    b.join();
    printf("%-44s %8.1f ms (status %d %d)\n",
           "two states destroyed at once (threads)", now_ms() - t0, r2, r3);
  }
  PHASE("nvjpegJpegStateDestroy hardware (fourth)", nvjpegJpegStateDestroy(s4));
  PHASE("nvjpegJpegStateDestroy second handle's", nvjpegJpegStateDestroy(s5));
  PHASE("nvjpegJpegStateDestroy GPU-hybrid", nvjpegJpegStateDestroy(shy));
  PHASE("nvjpegDestroy hardware", nvjpegDestroy(hw));
  PHASE("nvjpegDestroy hardware (second handle)", nvjpegDestroy(hw2));
  PHASE("nvjpegDestroy GPU-hybrid", nvjpegDestroy(hy));
  printf("%-44s %8.1f ms\n", "set-up phases in all", setup);
  printf("%-44s %8.1f ms\n", "main's start to its end", now_ms() - start);
  return 0;
}
