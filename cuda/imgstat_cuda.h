/*
 * The GPU backend's C API. Implemented in cuda/ when imgstat is built with
 * CUDA, and by src/gpu_none.c (every call answers IMGSTAT_ERR_NODEVICE with
 * "built without CUDA support") otherwise. Never prints or exits.
 */
#ifndef IMGSTAT_CUDA_H
#define IMGSTAT_CUDA_H

#include "imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel choice: 0 is the fused default ("fast"); 1..7 the classic ladder. */
#define IMGSTAT_KERNEL_FAST 0
#define IMGSTAT_KERNEL_LADDER_MIN 1
#define IMGSTAT_KERNEL_LADDER_MAX 7

/* 1 when this build contains the CUDA backend, 0 otherwise. */
int imgstat_gpu_compiled(void);

typedef struct imgstat_gpu imgstat_gpu;

/*
 * Initialises CUDA on device `device` (-1: the current default) and returns a
 * context holding streams, pinned staging buffers and scratch, reused across
 * images. Status: IMGSTAT_ERR_NODEVICE when there is no driver or device (auto
 * falls back quietly), IMGSTAT_ERR_DEVICE when a device is present but
 * unusable (driver too old, init failed: auto falls back with a warning).
 * Safe to call from a thread other than the one that later uses the context.
 */
imgstat_status imgstat_gpu_create(int device, imgstat_gpu **out,
                                  imgstat_error *err);
void imgstat_gpu_destroy(imgstat_gpu *gpu);

/* Short description of the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)". */
const char *imgstat_gpu_device_name(const imgstat_gpu *gpu);

/*
 * Computes one partial per channel of img on the device with the given kernel
 * (IMGSTAT_KERNEL_FAST or 1..7): the same fields imgstat_cpu_stats fills,
 * bit-identical to it for u8/u16, and for f32 within rounding (count, nan,
 * inf, min, max and their indices identical; mean within 1e-12 of
 * |mean| + std; m2 within 1e-12 relative, plus a term that matters only when
 * the plane's first finite sample is far from its mean: docs/gpu.md).
 * Images larger than the free device memory are reduced in ranges.
 */
imgstat_status imgstat_gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                 int kernel,
                                 imgstat_partial out[IMGSTAT_MAX_CHANNELS],
                                 imgstat_error *err);

#ifdef IMGSTAT_HAVE_CUDA
/* Caps the device memory imgstat_gpu_stats uses for image data (0: no cap,
 * the default); larger images are then reduced in ranges. For tests of that
 * path; only in CUDA builds. */
void imgstat_gpu_set_memory_limit(imgstat_gpu *gpu, size_t bytes);
#endif

/* ---- benchmark (`imgstat bench`) ----------------------------------------
 * The library measures and fills a result struct; the program prints it
 * (src/bench_cli.c). Implemented in cuda/bench.cu, and by src/bench_none.c
 * (IMGSTAT_ERR_NODEVICE, "needs a CUDA build") in a build without CUDA.
 */

#define IMGSTAT_BENCH_MAX_ROWS 80
#define IMGSTAT_BENCH_TEXT 96

typedef enum imgstat_bench_group {
  IMGSTAT_BENCH_COPY,   /* cudaMemcpyAsync device to device: the reference */
  IMGSTAT_BENCH_LADDER, /* one kernel of the ladder (or fast) on one input */
  IMGSTAT_BENCH_FUSED,  /* fused statistics (kernel fast) of a whole image */
  IMGSTAT_BENCH_CUB,    /* cub::DeviceReduce::Sum over the same bytes */
  IMGSTAT_BENCH_NPP     /* NPP min/max and mean/std of each channel */
} imgstat_bench_group;

/* One measured row. Times are in milliseconds, from CUDA events. */
typedef struct imgstat_bench_row {
  imgstat_bench_group group;
  char table[IMGSTAT_BENCH_TEXT]; /* title of the table the row belongs to */
  char name[IMGSTAT_BENCH_TEXT];  /* "kernel 3", "fast RGB8", ... */
  char note[IMGSTAT_BENCH_TEXT];  /* caveat, e.g. that the input fits in L2 */
  int kernel;                     /* IMGSTAT_KERNEL_FAST, 1..7, or -1 */
  int block_size;                 /* threads per block; 0: not applicable */
  uint64_t elements;              /* items reduced (copy: bytes) */
  uint64_t bytes;  /* bytes the work must move (copy: read + written) */
  int buffers;     /* input buffers rotated between runs (1: the same) */
  int runs;        /* timed runs behind the median */
  int host_bound;  /* 1 when the host could not queue runs as fast as the
                      device ran them (the figures then include gaps) */
  double first_ms; /* the first run, excluded from the median */
  double median_ms;
  double min_ms;
  double max_ms;
  double gbps;          /* bytes / median, in 1e9 bytes per second */
  double copy_fraction; /* gbps / the measured copy bandwidth */
  double step_speedup;  /* ladder: the previous row's median / this one */
  double cum_speedup;   /* ladder: the table's first row's median / this */
  double ratio;         /* fused: median / CUB's; NPP: NPP's / fused */
  double goal;          /* the goal the row is judged by (0: none) */
  int goal_met;         /* -1: no goal; 0: missed; 1: met */
  char goal_text[IMGSTAT_BENCH_TEXT]; /* the goal in words */
  int checked; /* 1: the result was compared with the host's */
  int ok;      /* the comparison passed */
  char check[IMGSTAT_BENCH_TEXT]; /* what was compared, or how it failed */
} imgstat_bench_row;

/* What to measure. All zeros gives the full benchmark on device 0. */
typedef struct imgstat_bench_options {
  int device;            /* CUDA device ordinal */
  int quick;             /* smaller sizes and fewer runs (a smoke test) */
  int runs;              /* timed runs per row; 0: 20 (quick: 5) */
  int warmup;            /* untimed runs after the first; 0: 2 */
  uint64_t copy_bytes;   /* bytes copied; 0: 1 GiB (quick: 64 MiB) */
  uint64_t small_ints;   /* ladder table 1; 0: 2^22 (quick: 2^20) */
  uint64_t large_ints;   /* ladder table 2; 0: 2^26 (quick: 2^22) */
  uint32_t image_width;  /* images and the u8 plane; 0: 8192 (quick 2048) */
  uint32_t image_height; /* 0: the same as the width */
  int small_block;       /* block size of table 1; 0: 128, as the study */
  int skip_npp;          /* leave out the NPP comparison */
} imgstat_bench_options;

/* Everything measured. Large (tens of KB): allocate it, not on the stack. */
typedef struct imgstat_bench_result {
  char device[IMGSTAT_BENCH_TEXT]; /* e.g. "NVIDIA H100 80GB HBM3 (sm_90)" */
  int sm_count;
  uint64_t l2_bytes;
  uint64_t memory_bytes;
  int runtime_version; /* CUDA runtime, e.g. 13000 */
  int driver_version;  /* CUDA version of the driver */
  double init_ms;      /* first CUDA call (context creation), host clock */
  double copy_gbps;    /* measured device-to-device bandwidth */
  int runs;            /* the options in force */
  int warmup;
  int quick;
  int have_npp; /* the NPP comparison was built in */
  int failures; /* rows whose check failed */
  int row_count;
  imgstat_bench_row rows[IMGSTAT_BENCH_MAX_ROWS];
} imgstat_bench_result;

/*
 * Runs the benchmark (tens of seconds; allocates up to about 3 GB of device
 * memory and as much host memory) and fills *out. opts may be NULL (all
 * defaults). Returns IMGSTAT_OK when everything ran, even if a check failed
 * (out->failures counts those); IMGSTAT_ERR_NODEVICE without a device or a
 * CUDA build; IMGSTAT_ERR_DEVICE / IMGSTAT_ERR_NOMEM when a call failed (out
 * then holds the rows measured before it).
 */
imgstat_status imgstat_bench_run(const imgstat_bench_options *opts,
                                 imgstat_bench_result *out, imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_H */
