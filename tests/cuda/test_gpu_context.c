/*
 * The GPU context's tests, part of test_gpu (test_gpu.c runs them): submit /
 * wait with several images in flight from two threads, images with a row
 * stride (pageable and pinned, whole and by ranges), device planes wrapped
 * in place or pitched, dense interleaved images reduced without gathering,
 * and the context's device honoured from a thread whose current device
 * differs (with two GPUs).
 */
#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"
#include "test_gpu.h"
#include "test_gpu_util.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the context: submit / wait, strides, device planes, devices -------- */

/* 1 when the first `channels` partials are the same bits. */
static int same_partials(const imgstat_partial *a, const imgstat_partial *b,
                         int channels) {
  return memcmp(a, b, (size_t)channels * sizeof *a) == 0;
}

#define NJOBS 12
static imgstat_image g_jobs[NJOBS];
static imgstat_partial g_job_want[NJOBS][IMGSTAT_MAX_CHANNELS];
static imgstat_partial g_job_got[NJOBS][IMGSTAT_MAX_CHANNELS];

static int job_kernel(int i) { return i % 3 == 0 ? (i / 3) % 8 : 0; }

/* Images of every sample type and several shapes, some strided (pinned or
 * not), whose statistics are first computed one after another. */
static int make_jobs(void) {
  static const struct {
    uint32_t w, h;
    int ch;
    imgstat_sample s;
    size_t pad; /* 0: dense; else the rows' extra bytes */
    int pinned;
  } spec[NJOBS] = {
      {1, 1, 1, IMGSTAT_U8, 0, 0},        {1025, 3, 3, IMGSTAT_U8, 0, 0},
      {4097, 33, 4, IMGSTAT_U16, 0, 0},   {777, 501, 3, IMGSTAT_F32, 0, 0},
      {2048, 1024, 3, IMGSTAT_U8, 0, 0},  {100003, 1, 1, IMGSTAT_F32, 0, 0},
      {513, 511, 2, IMGSTAT_U16, 6, 0},   {300, 200, 4, IMGSTAT_U8, 13, 1},
      {1000, 999, 3, IMGSTAT_F32, 12, 0}, {17, 3001, 1, IMGSTAT_U8, 1, 0},
      {2047, 2049, 1, IMGSTAT_U16, 0, 1}, {64, 64, 3, IMGSTAT_F32, 0, 0}};
  for (int i = 0; i < NJOBS; ++i) {
    imgstat_image dense;
    /* quick (compute-sanitizer): a sixteenth of the pixels */
    uint32_t w = g_quick ? (spec[i].w + 3) / 4 : spec[i].w;
    uint32_t h = g_quick ? (spec[i].h + 3) / 4 : spec[i].h;
    if (!test_image_make(&dense, w, h, spec[i].ch, spec[i].s))
      return 0;
    fill_random(&dense);
    if (spec[i].pad || spec[i].pinned) {
      int ok = test_gpu_strided_copy(&dense, spec[i].pad, spec[i].pinned,
                                     &g_jobs[i]);
      test_image_free(&dense);
      if (!ok)
        return 0;
    } else {
      g_jobs[i] = dense;
    }
    imgstat_error err;
    if (imgstat_gpu_stats(g_gpu, &g_jobs[i], job_kernel(i), g_job_want[i],
                          &err) != IMGSTAT_OK) {
      printf("\n  job %d: %s\n", i, err.message);
      return 0;
    }
  }
  return 1;
}

static int job_pinned(int i) { return i == 7 || i == 10; }

static void free_jobs(void) {
  for (int i = 0; i < NJOBS; ++i) {
    if (g_jobs[i].stride || job_pinned(i))
      test_gpu_strided_free(&g_jobs[i], job_pinned(i));
    else
      test_image_free(&g_jobs[i]);
  }
}

/* A thread that keeps two jobs in flight: images first, first + 2, ... */
static void *submit_thread(void *arg) {
  int first = *(int *)arg, bad = 0, held = 0;
  imgstat_gpu_ticket ticket[2];
  int which[2];
  imgstat_error err;
  for (int i = first; i < NJOBS || held > 0; i += 2) {
    if (held == 2 || (i >= NJOBS && held > 0)) {
      if (imgstat_gpu_stats_wait(g_gpu, ticket[0], g_job_got[which[0]], &err) !=
          IMGSTAT_OK) {
        printf("\n  wait %d: %s\n", which[0], err.message);
        bad++;
      }
      ticket[0] = ticket[1];
      which[0] = which[1];
      held--;
    }
    if (i >= NJOBS)
      continue;
    if (imgstat_gpu_stats_submit(g_gpu, &g_jobs[i], job_kernel(i),
                                 &ticket[held], &err) != IMGSTAT_OK) {
      printf("\n  submit %d: %s\n", i, err.message);
      bad++;
      continue;
    }
    which[held++] = i;
  }
  return (void *)(intptr_t)bad;
}

/* Several images in flight from two threads: the same partials as one
 * after another. */
void test_submit_threads(void) {
  if (!make_jobs()) {
    CU_FAIL("could not make the images or their sequential statistics");
    return;
  }
  memset(g_job_got, 0xA5, sizeof g_job_got);
  pthread_t th[2];
  int first[2] = {0, 1};
  for (int t = 0; t < 2; ++t)
    CU_ASSERT_FATAL(pthread_create(&th[t], NULL, submit_thread, &first[t]) ==
                    0);
  int bad = 0;
  for (int t = 0; t < 2; ++t) {
    void *r = NULL;
    pthread_join(th[t], &r);
    bad += (int)(intptr_t)r;
  }
  CU_ASSERT_EQUAL(bad, 0);
  for (int i = 0; i < NJOBS; ++i) {
    int ok = same_partials(g_job_got[i], g_job_want[i], g_jobs[i].channels);
    if (!ok)
      printf("\n  job %d: in flight differs from one at a time\n", i);
    CU_ASSERT(ok);
  }
  free_jobs();
}

/* One thread: every slot in flight, waited in reverse order; a ticket is
 * good for one wait only. */
void test_submit_all_slots(void) {
  imgstat_image img[IMGSTAT_GPU_SLOTS];
  imgstat_partial want[IMGSTAT_GPU_SLOTS][IMGSTAT_MAX_CHANNELS],
      got[IMGSTAT_MAX_CHANNELS];
  imgstat_gpu_ticket t[IMGSTAT_GPU_SLOTS];
  imgstat_error err;
  for (int i = 0; i < IMGSTAT_GPU_SLOTS; ++i) {
    CU_ASSERT_FATAL(test_image_make(&img[i], 333 + 7 * i, 101, 1 + i % 4,
                                    g_samples[i % 3]));
    fill_random(&img[i]);
    CU_ASSERT_FATAL(imgstat_gpu_stats(g_gpu, &img[i], 0, want[i], &err) ==
                    IMGSTAT_OK);
  }
  for (int i = 0; i < IMGSTAT_GPU_SLOTS; ++i)
    CU_ASSERT_FATAL(imgstat_gpu_stats_submit(g_gpu, &img[i], 0, &t[i], &err) ==
                    IMGSTAT_OK);
  for (int i = IMGSTAT_GPU_SLOTS - 1; i >= 0; --i) {
    CU_ASSERT_EQUAL(imgstat_gpu_stats_wait(g_gpu, t[i], got, &err), IMGSTAT_OK);
    CU_ASSERT(same_partials(got, want[i], img[i].channels));
    /* waited: the ticket is spent */
    CU_ASSERT_EQUAL(imgstat_gpu_stats_wait(g_gpu, t[i], got, &err),
                    IMGSTAT_ERR_ARG);
  }
  imgstat_gpu_ticket bogus = {IMGSTAT_GPU_SLOTS + 3, 1};
  CU_ASSERT_EQUAL(imgstat_gpu_stats_wait(g_gpu, bogus, got, &err),
                  IMGSTAT_ERR_ARG);
  for (int i = 0; i < IMGSTAT_GPU_SLOTS; ++i)
    test_image_free(&img[i]);
}

/* Rows `stride` bytes apart (padding 0xEE), pageable and pinned, whole and
 * by ranges through a small buffer: the same bits as the dense image. */
void test_strided(void) {
  static const int kernels[] = {0, 3, 7};
  int bad = 0;
  for (int s = 0; s < 3; ++s) {
    imgstat_image dense;
    CU_ASSERT_FATAL(
        test_image_make(&dense, 3001, g_quick ? 31 : 301, 3, g_samples[s]));
    fill_random(&dense);
    for (int k = 0; k < 3; ++k) {
      imgstat_partial want[IMGSTAT_MAX_CHANNELS], got[IMGSTAT_MAX_CHANNELS];
      imgstat_error err;
      for (int pinned = 0; pinned < 2; ++pinned)
        for (int ranges = 0; ranges < 2; ++ranges) {
          /* Float partials depend on how the plane is cut into ranges (the
           * merge order), so the dense image is reduced the same way. */
          if (ranges)
            imgstat_gpu_set_memory_limit(g_gpu, (size_t)64 << 10);
          CU_ASSERT_FATAL(imgstat_gpu_stats(g_gpu, &dense, kernels[k], want,
                                            &err) == IMGSTAT_OK);
          imgstat_gpu_set_memory_limit(g_gpu, 0);
          imgstat_image strided;
          CU_ASSERT_FATAL(test_gpu_strided_copy(&dense, 5 * g_samples[s] + 16,
                                                pinned, &strided));
          if (ranges) /* ranges of 64 Ki samples: rows cut anywhere */
            imgstat_gpu_set_memory_limit(g_gpu, (size_t)64 << 10);
          memset(got, 0xA5, sizeof got);
          imgstat_status st =
              imgstat_gpu_stats(g_gpu, &strided, kernels[k], got, &err);
          imgstat_gpu_set_memory_limit(g_gpu, 0);
          if (st != IMGSTAT_OK || !same_partials(got, want, 3)) {
            bad++;
            printf("\n  strided depth %d kernel %d pinned %d ranges %d: %s\n",
                   imgstat_sample_depth(g_samples[s]), kernels[k], pinned,
                   ranges, st == IMGSTAT_OK ? "differs" : err.message);
          }
          test_gpu_strided_free(&strided, pinned);
        }
    }
    test_image_free(&dense);
  }
  CU_ASSERT_EQUAL(bad, 0);
  /* a stride shorter than a row is refused */
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, 100, 2, 1, IMGSTAT_U16));
  img.stride = 199;
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, 0, out, &err),
                  IMGSTAT_ERR_ARG);
  test_image_free(&img);
}

/* Planes already on the device: dense ones off the 16-byte grid (used in
 * place: the kernels' unaligned heads), pitched ones, ones not even
 * aligned to their sample (both copied once): the statistics of the host
 * image, every kernel. */
void test_wrap(void) {
  static const struct {
    size_t offset; /* in samples, or 1 byte (misaligned) when bytes set */
    int bytes;
    size_t pad; /* pitch - row, bytes */
  } layouts[] = {{0, 0, 0}, {1, 0, 0}, {3, 0, 0}, {0, 0, 40}, {1, 1, 0}};
  int bad = 0;
  for (int s = 0; s < 3; ++s) {
    imgstat_image img;
    CU_ASSERT_FATAL(test_image_make(&img, 1031, 17, 3, g_samples[s]));
    fill_random(&img);
    imgstat_partial want[NKERNELS][IMGSTAT_MAX_CHANNELS];
    imgstat_error err;
    for (int k = 0; k < NKERNELS; ++k)
      CU_ASSERT_FATAL(imgstat_gpu_stats(g_gpu, &img, g_kernels[k], want[k],
                                        &err) == IMGSTAT_OK);
    const int nk = g_quick ? 2 : NKERNELS; /* quick: fast and kernel 1 */
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; ++l) {
      if (layouts[l].bytes && g_samples[s] == IMGSTAT_U8)
        continue; /* a byte is always aligned */
      size_t offset = layouts[l].bytes ? 1 : layouts[l].offset * g_samples[s];
      size_t row = (size_t)img.width * img.sample;
      size_t pitch = layouts[l].pad ? row + layouts[l].pad : 0;
      void *block = NULL, *planes[IMGSTAT_MAX_CHANNELS];
      CU_ASSERT_FATAL(
          test_gpu_device_copy(&img, offset, pitch, &block, planes));
      imgstat_gpu_image *d = NULL;
      imgstat_status st =
          imgstat_gpu_image_wrap(g_gpu, img.width, img.height, img.channels,
                                 img.sample, planes, pitch, &d, &err);
      CU_ASSERT_EQUAL(st, IMGSTAT_OK);
      for (int k = 0; k < nk && st == IMGSTAT_OK; ++k) {
        imgstat_partial got[IMGSTAT_MAX_CHANNELS];
        memset(got, 0xA5, sizeof got);
        imgstat_status sk =
            imgstat_gpu_image_stats(g_gpu, d, g_kernels[k], got, &err);
        /* A float plane off the 16-byte grid is read with other loads but
         * in the same order: every plane, to the bit. */
        int same = sk == IMGSTAT_OK && same_partials(got, want[k], 3);
        if (!same) {
          bad++;
          printf("\n  wrapped depth %d layout %zu kernel %d: %s\n",
                 imgstat_sample_depth(g_samples[s]), l, g_kernels[k],
                 sk == IMGSTAT_OK ? "differs" : err.message);
        }
      }
      imgstat_gpu_image_release(g_gpu, d);
      test_gpu_free(block);
    }
    test_image_free(&img);
  }
  CU_ASSERT_EQUAL(bad, 0);
  /* host memory is not device memory; a pitch shorter than a row */
  uint8_t host[64];
  void *hp[1] = {host};
  imgstat_gpu_image *d = NULL;
  imgstat_error err;
  CU_ASSERT_EQUAL(
      imgstat_gpu_image_wrap(g_gpu, 8, 8, 1, IMGSTAT_U8, hp, 0, &d, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NULL(d);
  void *block = NULL, *planes[IMGSTAT_MAX_CHANNELS];
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, 8, 8, 1, IMGSTAT_U16));
  fill_random(&img);
  CU_ASSERT_FATAL(test_gpu_device_copy(&img, 0, 0, &block, planes));
  CU_ASSERT_EQUAL(
      imgstat_gpu_image_wrap(g_gpu, 8, 8, 1, IMGSTAT_U16, planes, 15, &d, &err),
      IMGSTAT_ERR_ARG);
  test_gpu_free(block);
  test_image_free(&img);
}

/* Dense interleaved (HWC) u8 / u16 / f32 images of 2 to 4 channels on the
 * device, wrapped as they are: the interleaved kernels read them without
 * gathering (ist_reduce_stats_hwc; f32 in the canonical order, to the bit:
 * against the CPU's scan, imgstat_partial_scan). Every channel against the
 * reference scan of its
 * plane: sizes with a tail of samples and a last, partial tile; random
 * full-range samples (saturated early), a narrow range with a unique
 * minimum at the last pixel and maximum at the first of one channel, and a
 * constant image (ties: the first pixel). Then the planes gathered on
 * demand (a download) equal the image's. */
void test_hwc(void) {
  static const struct {
    uint32_t w, h;
  } sizes[] = {{1, 1}, {5, 3}, {1031, 17}, {977, 1503}, {4096, 2048}};
  const size_t nsizes = g_quick ? 3 : sizeof sizes / sizeof *sizes;
  int bad = 0, runs = 0;
  for (int s = 0; s < 3; ++s)
    for (int ch = 2; ch <= 4; ++ch)
      for (size_t z = 0; z < nsizes; ++z)
        for (int pattern = 0; pattern < 3; ++pattern) {
          imgstat_image img;
          CU_ASSERT_FATAL(
              test_image_make(&img, sizes[z].w, sizes[z].h, ch, g_samples[s]));
          const uint64_t n = npix(&img);
          const unsigned top = g_samples[s] == IMGSTAT_U8 ? 255 : 65535;
          /* floats: the same patterns, as values in [0, 65535] */
          fill_random(&img);
          for (int c = 0; c < ch && pattern > 0; ++c)
            for (uint64_t i = 0; i < n; ++i) {
              unsigned v = pattern == 2
                               ? 7u
                               : 10 + (unsigned)(test_rand(&g_rng) % (top / 2));
              if (pattern == 1 && c == ch - 1 && i == n - 1)
                v = 3; /* the unique minimum, at the last pixel */
              if (pattern == 1 && c == 1 && i == 0 && n > 1)
                v = top - 1; /* the unique maximum, at the first */
              if (g_samples[s] == IMGSTAT_U8)
                ((uint8_t *)img.planes[c])[i] = (uint8_t)v;
              else if (g_samples[s] == IMGSTAT_U16)
                ((uint16_t *)img.planes[c])[i] = (uint16_t)v;
              else
                ((float *)img.planes[c])[i] = (float)v;
            }
          imgstat_partial ref[IMGSTAT_MAX_CHANNELS], got[IMGSTAT_MAX_CHANNELS];
          for (int c = 0; c < ch; ++c) {
            if (img.sample == IMGSTAT_F32) { /* the CPU's bits */
              imgstat_partial_init(&ref[c]);
              imgstat_partial_scan(&ref[c], img.planes[c], img.sample, 0, n);
            } else {
              ref_scan(img.planes[c], img.sample, n, &ref[c]);
            }
          }
          const size_t px = (size_t)ch * img.sample;
          void *block = NULL;
          CU_ASSERT_FATAL(
              test_gpu_device_interleaved(&img, img.width * px, px, &block));
          imgstat_gpu_image *d = NULL;
          imgstat_error err;
          char what[96];
          snprintf(what, sizeof what, "HWC %ux%u x%d depth %d pattern %d",
                   img.width, img.height, ch, imgstat_sample_depth(img.sample),
                   pattern);
          imgstat_status st = imgstat_gpu_image_wrap_strided(
              g_gpu, img.width, img.height, ch, img.sample, block,
              img.width * px, px, img.sample, &d, &err);
          memset(got, 0xA5, sizeof got);
          if (st == IMGSTAT_OK)
            st = imgstat_gpu_image_stats(g_gpu, d, IMGSTAT_KERNEL_FAST, got,
                                         &err);
          int ok = st == IMGSTAT_OK;
          for (int c = 0; c < ch && ok; ++c)
            ok =
                partial_matches(&got[c], &ref[c], img.sample, 0, 0, what, 0, c);
          /* the planes, gathered when asked for */
          void *plane = malloc(n * img.sample + 1);
          CU_ASSERT_FATAL(plane != NULL);
          for (int c = 0; c < ch && ok; ++c)
            ok = imgstat_gpu_image_download(g_gpu, d, c, plane, &err) ==
                     IMGSTAT_OK &&
                 memcmp(plane, img.planes[c], n * img.sample) == 0;
          free(plane);
          runs++;
          if (!ok) {
            bad++;
            printf("\n  %s: %s\n", what,
                   st == IMGSTAT_OK ? "differs" : err.message);
          }
          imgstat_gpu_image_release(g_gpu, d);
          test_gpu_free(block);
          test_image_free(&img);
        }
  printf("(%d interleaved images) ", runs);
  CU_ASSERT_EQUAL(bad, 0);
}

/* Another device current on the calling thread: a context's calls still
 * run on its own device. */
typedef struct device_run {
  imgstat_gpu *gpu;
  int current; /* made current on the thread first */
  const imgstat_image *img;
  imgstat_partial host[IMGSTAT_MAX_CHANNELS], dev[IMGSTAT_MAX_CHANNELS];
  imgstat_status st_host, st_dev;
  imgstat_error err;
} device_run;

static void *device_thread(void *arg) {
  device_run *r = arg;
  if (!test_gpu_set_device(r->current)) {
    r->st_host = r->st_dev = IMGSTAT_ERR_DEVICE;
    return NULL;
  }
  r->st_host = imgstat_gpu_stats(r->gpu, r->img, 0, r->host, &r->err);
  imgstat_gpu_image *d = NULL;
  r->st_dev = imgstat_gpu_image_upload(r->gpu, r->img, &d, &r->err);
  if (r->st_dev == IMGSTAT_OK)
    r->st_dev = imgstat_gpu_image_stats(r->gpu, d, 0, r->dev, &r->err);
  imgstat_gpu_image_release(r->gpu, d);
  return NULL;
}

void test_other_device(void) {
  if (test_gpu_device_count() < 2) {
    printf("(one device: not run) ");
    return;
  }
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, 1999, 1001, 3, IMGSTAT_U16));
  fill_random(&img);
  imgstat_partial want[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_cpu_stats(&img, 1, want, &err) == IMGSTAT_OK);
  /* a context on each of devices 0 and 1, used from a thread on the other */
  for (int dev = 0; dev < 2; ++dev) {
    device_run r;
    memset(&r, 0, sizeof r);
    r.current = 1 - dev;
    r.img = &img;
    CU_ASSERT_FATAL(imgstat_gpu_create(dev, &r.gpu, &err) == IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_gpu_device(r.gpu), dev);
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, device_thread, &r) == 0);
    pthread_join(th, NULL);
    if (r.st_host != IMGSTAT_OK || r.st_dev != IMGSTAT_OK)
      printf("\n  context on device %d from a thread on device %d: %s\n", dev,
             r.current, r.err.message);
    CU_ASSERT_EQUAL(r.st_host, IMGSTAT_OK);
    CU_ASSERT_EQUAL(r.st_dev, IMGSTAT_OK);
    CU_ASSERT(same_partials(r.host, want, 3));
    CU_ASSERT(same_partials(r.dev, want, 3));
    imgstat_gpu_destroy(r.gpu);
  }
  test_image_free(&img);
}
