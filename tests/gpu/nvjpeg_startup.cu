// The start-up costs behind `imgstat --jpeg-decoder gpu` on the GPU host,
// one phase at a time (wall milliseconds): CUDA's context, nvJPEG's handle
// and state on the hardware backend, then on the GPU-hybrid backend, and
// their destruction. Build and run (GPU host):
//   nvcc -O2 -o /tmp/nvjpeg_startup tests/gpu/nvjpeg_startup.cu -lnvjpeg
//   /tmp/nvjpeg_startup
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <nvjpeg.h>

static double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch())
      .count();
}

#define PHASE(name, expr)                                                      \
  do {                                                                         \
    double t0 = now_ms();                                                      \
    int rc = (int)(expr);                                                      \
    printf("%-34s %8.1f ms (status %d)\n", name, now_ms() - t0, rc);            \
  } while (0)

int main() {
  nvjpegHandle_t hw = nullptr, hy = nullptr;
  nvjpegJpegState_t shw = nullptr, shy = nullptr;
  PHASE("cudaFree(0): CUDA context", cudaFree(0));
  PHASE("nvjpegCreateEx hardware", nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE,
                                                   nullptr, nullptr, 0, &hw));
  PHASE("nvjpegJpegStateCreate hardware", nvjpegJpegStateCreate(hw, &shw));
  PHASE("nvjpegDecodeBatchedInitialize hw 64",
        nvjpegDecodeBatchedInitialize(hw, shw, 64, 1, NVJPEG_OUTPUT_RGB));
  PHASE("nvjpegCreateEx GPU-hybrid", nvjpegCreateEx(NVJPEG_BACKEND_GPU_HYBRID,
                                                     nullptr, nullptr, 0, &hy));
  PHASE("nvjpegJpegStateCreate GPU-hybrid", nvjpegJpegStateCreate(hy, &shy));
  PHASE("nvjpegJpegStateDestroy both",
        nvjpegJpegStateDestroy(shw) + nvjpegJpegStateDestroy(shy));
  PHASE("nvjpegDestroy both", nvjpegDestroy(hw) + nvjpegDestroy(hy));
  return 0;
}
