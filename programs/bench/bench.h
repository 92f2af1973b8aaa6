/*
 * `imgstat bench`: what the benchmark measures and fills, for the program's
 * command line (programs/bench/bench_cmd.c) to print. Not installed and not in
 * the library: the benchmark (programs/bench/bench.cu,
 * programs/bench/norm_bench.cu) is compiled into the program only, with NPP; a
 * build without CUDA has programs/bench/bench_none.c instead
 * (IMGSTAT_ERR_NODEVICE, "needs a CUDA build"). Never prints or exits.
 */
#ifndef IMGSTAT_BENCH_H
#define IMGSTAT_BENCH_H

#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* Kernel timings of a synthetic 8-bit RGB image of width x height (random
 * values), for `imgstat bench`: the fused minmax pass (RGB8 -> RGB8) and
 * the histogram of all three planes, each the median of `runs` runs by CUDA
 * events after a warm-up, with the bytes each must move, and the
 * device-to-device copy of the same image as the bandwidth reference. */
typedef struct imgstat_gpu_norm_timing {
  double normalize_ms;
  uint64_t normalize_bytes; /* read + written */
  double histogram_ms;
  uint64_t histogram_bytes; /* read */
  int histogram_ok;         /* counts equal to the CPU's */
  double histogram_alt_ms;  /* the same with warp-aggregated global atomics */
  int histogram_alt_ok;
  double scan_ms;      /* scan + percentile search, 65536 bins */
  double copy_ms;      /* cudaMemcpy device to device of the image */
  uint64_t copy_bytes; /* read + written */
  int checked_ok;      /* output equal to the CPU's on the same plan */
} imgstat_gpu_norm_timing;

imgstat_status imgstat_gpu_norm_bench(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int runs,
                                      imgstat_gpu_norm_timing *t,
                                      imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_BENCH_H */
