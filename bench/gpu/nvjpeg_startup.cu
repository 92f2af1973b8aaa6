// The start-up and teardown costs behind `imgstat --jpeg-decoder gpu` on the
// GPU host, one phase at a time (wall milliseconds): CUDA's context,
// nvJPEG's handle on the hardware backend, its decode states (the first, a
// second on the same handle, then two more made at once on two threads: what
// the lanes of one device do), a second hardware handle (what a lane with
// handles of its own pays), a handle whose device memory is stream-ordered
// (nvjpegCreateExV2 with cudaMallocAsync from the kept pool), the GPU-hybrid
// backend, then their destruction one by one. With files (same size, RGB
// JPEGs) it then decodes them in batches of N: on one state (twice: the first
// pass pays the first batch's allocations), on two states of one handle from
// two threads at once (the stage's lanes), and on two handles from two
// threads: whether a shared handle serializes the lanes, and how nvJPEG's
// call splits into its host part and the wait for the device. The last line
// is the time from main's start: the process's exit (CUDA's own teardown)
// is the whole process's wall time less it.
// Build and run (GPU host):
//   nvcc -O2 -std=c++17 -o /tmp/nvjpeg_startup \
//     bench/gpu/nvjpeg_startup.cu -lnvjpeg -lpthread
//   /tmp/nvjpeg_startup [N FILE...]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <thread>
#include <vector>

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

/* Stream-ordered device memory for nvJPEG (nvjpegCreateExV2). */
static int pool_malloc(void *, void **p, size_t n, cudaStream_t s) {
  return (int)cudaMallocAsync(p, n, s);
}
static int pool_free(void *, void *p, size_t, cudaStream_t s) {
  return (int)cudaFreeAsync(p, s);
}
static int pinned_malloc(void *, void **p, size_t n, cudaStream_t) {
  return (int)cudaHostAlloc(p, n, cudaHostAllocDefault);
}
static int pinned_free(void *, void *p, size_t, cudaStream_t) {
  return (int)cudaFreeHost(p);
}

/* The files, read whole; the first one's size is every output's. */
struct files {
  std::vector<std::vector<unsigned char>> data;
  int width = 0, height = 0;
};

static bool read_files(int argc, char **argv, files *f) {
  for (int k = 2; k < argc; k++) {
    FILE *fp = fopen(argv[k], "rb");
    if (!fp)
      continue;
    std::vector<unsigned char> b;
    unsigned char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, fp)) > 0)
      b.insert(b.end(), buf, buf + got);
    fclose(fp);
    f->data.push_back(b);
  }
  return !f->data.empty();
}

/* One decoder of the experiment: a state, a stream, planes for a batch. */
struct lane {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  cudaStream_t stream = nullptr;
  unsigned char *planes = nullptr;
  int batch = 0;
  double host_ms = 0, wait_ms = 0;
  int failed = 0;
};

static void lane_open(lane *l, nvjpegHandle_t h, const files &f, int n) {
  l->handle = h;
  if (nvjpegJpegStateCreate(h, &l->state) != NVJPEG_STATUS_SUCCESS ||
      cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking) !=
          cudaSuccess ||
      cudaMalloc(&l->planes, (size_t)f.width * f.height * 3 * n) != cudaSuccess)
    l->failed = 1 << 20;
}

static void lane_close(lane *l) {
  cudaStreamSynchronize(l->stream);
  nvjpegJpegStateDestroy(l->state);
  cudaStreamDestroy(l->stream);
  cudaFree(l->planes);
}

/* Decodes every step-th batch of n files from batch `first`: each lane of
 * a pass takes its own batches. */
static void lane_run(lane *l, const files &f, int n, int first, int step) {
  size_t plane = (size_t)f.width * f.height;
  std::vector<const unsigned char *> data(n);
  std::vector<size_t> lengths(n);
  std::vector<nvjpegImage_t> dest(n);
  int total = (int)f.data.size();
  for (int b = first * n; b < total && l->failed < (1 << 20); b += step * n) {
    int m = total - b < n ? total - b : n;
    if (l->batch != m) {
      if (nvjpegDecodeBatchedInitialize(l->handle, l->state, m, 1,
                                        NVJPEG_OUTPUT_RGB) !=
          NVJPEG_STATUS_SUCCESS)
        l->failed++;
      l->batch = m;
    }
    for (int k = 0; k < m; k++) {
      data[k] = f.data[b + k].data();
      lengths[k] = f.data[b + k].size();
      dest[k] = nvjpegImage_t{};
      for (int c = 0; c < 3; c++) {
        dest[k].channel[c] = l->planes + (size_t)(k * 3 + c) * plane;
        dest[k].pitch[c] = (unsigned)f.width;
      }
    }
    double t0 = now_ms();
    if (nvjpegDecodeBatched(l->handle, l->state, data.data(), lengths.data(),
                            dest.data(), l->stream) != NVJPEG_STATUS_SUCCESS)
      l->failed++;
    double t1 = now_ms();
    if (cudaStreamSynchronize(l->stream) != cudaSuccess)
      l->failed++;
    l->host_ms += t1 - t0;
    l->wait_ms += now_ms() - t1;
  }
}

/* One pass over the files on the lanes, each on its own thread. */
static void pass(const char *name, std::vector<lane> &lanes, const files &f,
                 int n) {
  for (lane &l : lanes) {
    l.host_ms = l.wait_ms = 0;
    l.failed = l.failed >= (1 << 20) ? l.failed : 0;
  }
  double t0 = now_ms();
  std::vector<std::thread> t;
  int nl = (int)lanes.size();
  for (int k = 0; k < nl; k++)
    t.emplace_back(lane_run, &lanes[k], std::cref(f), n, k, nl);
  for (std::thread &x : t)
    x.join();
  double ms = now_ms() - t0;
  double host = 0, wait = 0;
  int failed = 0;
  for (lane &l : lanes) {
    host += l.host_ms;
    wait += l.wait_ms;
    failed += l.failed;
  }
  printf("%-44s %8.1f ms, %6.0f images/s; nvJPEG host %.1f ms, wait %.1f ms "
         "(summed), %d failures\n",
         name, ms, f.data.size() * 1000.0 / ms, host, wait, failed);
}

static void decode_experiment(int n, const files &f) {
  nvjpegHandle_t a = nullptr, b = nullptr;
  /* the handles' flags: NVJPEG_PROBE_FLAGS (default 0; imgstat's are 4|32,
   * BITSTREAM_STRICT | UPSAMPLING_WITH_INTERPOLATION) */
  const char *fl = getenv("NVJPEG_PROBE_FLAGS");
  unsigned flags = fl ? (unsigned)strtoul(fl, nullptr, 0) : 0;
  printf(
      "decode: handles with flags %u: status %d %d\n", flags,
      (int)nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, flags, &a),
      (int)nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, flags,
                          &b));
  int comps = 0;
  nvjpegChromaSubsampling_t sub;
  int w[NVJPEG_MAX_COMPONENT], h[NVJPEG_MAX_COMPONENT];
  files g = f;
  if (nvjpegGetImageInfo(a, f.data[0].data(), f.data[0].size(), &comps, &sub, w,
                         h) != NVJPEG_STATUS_SUCCESS) {
    printf("decode: the first file is not a JPEG nvJPEG reads\n");
  } else {
    g.width = w[0];
    g.height = h[0];
    printf("decode: %zu files of %d x %d, batches of %d\n", g.data.size(),
           g.width, g.height, n);
    /* one state; two states of one handle; two handles: two passes each
     * (the first pays the first batch's allocations) */
    const struct {
      const char *name;
      std::vector<nvjpegHandle_t> handles;
    } runs[] = {{"one state", {a}},
                {"two states, one handle, two threads", {a, a}},
                {"three states, one handle, three threads", {a, a, a}},
                {"two handles, two threads", {a, b}}};
    for (const auto &r : runs) {
      std::vector<lane> lanes(r.handles.size());
      for (size_t k = 0; k < lanes.size(); k++)
        lane_open(&lanes[k], r.handles[k], g, n);
      char name[96];
      for (int p = 1; p <= 2; p++) {
        snprintf(name, sizeof name, "%s, pass %d", r.name, p);
        pass(name, lanes, g, n);
      }
      for (lane &l : lanes)
        lane_close(&l);
    }
  }
  nvjpegDestroy(a);
  nvjpegDestroy(b);
}

int main(int argc, char **argv) {
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
  {
    /* imgstat's flag sets, tried in this order (cuda/nvjpeg.cu) */
    const struct {
      const char *name;
      unsigned flags;
    } sets[] = {
        {"nvjpegCreateEx hw, STRICT|INTERPOLATION", 4u | 32u},
        {"nvjpegCreateEx hw, STRICT", 4u},
        {"nvjpegCreateEx hw, HW_DECODE_NO_PIPELINE", 1u},
    };
    for (const auto &fs : sets) {
      nvjpegHandle_t h = nullptr;
      PHASE(fs.name, nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr,
                                    fs.flags, &h));
      if (h) {
        nvjpegJpegState_t st = nullptr;
        PHASE("  nvjpegJpegStateCreate on it", nvjpegJpegStateCreate(h, &st));
        if (st)
          nvjpegJpegStateDestroy(st);
        nvjpegDestroy(h);
      }
    }
  }
  PHASE("nvjpegCreateEx hardware (second handle)",
        nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &hw2));
  PHASE("nvjpegJpegStateCreate on the second handle",
        nvjpegJpegStateCreate(hw2, &s5));
  {
    cudaMemPool_t pool = nullptr;
    uint64_t keep = UINT64_MAX;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    nvjpegDevAllocatorV2_t dev = {pool_malloc, pool_free, nullptr};
    nvjpegPinnedAllocatorV2_t pin = {pinned_malloc, pinned_free, nullptr};
    nvjpegHandle_t hv2 = nullptr;
    nvjpegJpegState_t sv2 = nullptr;
    PHASE("nvjpegCreateExV2 hardware, stream-ordered",
          nvjpegCreateExV2(NVJPEG_BACKEND_HARDWARE, &dev, &pin, 0, &hv2));
    PHASE("nvjpegJpegStateCreate on it", nvjpegJpegStateCreate(hv2, &sv2));
    PHASE("nvjpegJpegStateDestroy on it", nvjpegJpegStateDestroy(sv2));
    PHASE("nvjpegDestroy it", nvjpegDestroy(hv2));
  }
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
  files f;
  if (argc > 2 && atoi(argv[1]) > 0 && read_files(argc, argv, &f))
    decode_experiment(atoi(argv[1]), f);
  printf("%-44s %8.1f ms\n", "main's start to its end", now_ms() - start);
  return 0;
}
