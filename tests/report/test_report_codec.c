/* The report's serialized form and merge (imgstat/report.h), as an MPI
 * run's ranks use them: a report of inputs 0..N-1 split at any place, each
 * part serialized, read back and merged in order, serializes to the same
 * bytes as the report of them all in one; damaged bytes (every truncation,
 * every flipped byte, counts past the bytes or the bounds with a valid
 * checksum, another version) are refused with IMGSTAT_ERR_FORMAT. */
#include "imgstat/report.h"
#include "test_util.h"

#include "checksum.h"
#include "le_codec.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 23

/* Input k's result: failed when k % 7 == 3 (two reasons), else a w x 3
 * image of k % 5 + 1 channels (5: more than the report keeps), 8-bit. */
static void result_of(int k, imgstat_job_result *res) {
  memset(res, 0, sizeof *res);
  if (k % 7 == 3) {
    res->status = IMGSTAT_ERR_FORMAT;
    res->error.status = IMGSTAT_ERR_FORMAT;
    snprintf(res->error.message, sizeof res->error.message, "%s",
             k < 12 ? "not an image" : "truncated");
    return;
  }
  res->status = IMGSTAT_OK;
  res->width = 4 + (uint32_t)k % 3;
  res->height = 3;
  res->channels = k % 5 + 1;
  res->sample = IMGSTAT_U8;
  res->backend = IMGSTAT_BACKEND_CPU;
  res->format = k % 2 ? "PNG" : "NPY";
  for (int c = 0; c < res->channels; c++) {
    uint8_t px[6 * 3];
    for (uint32_t i = 0; i < res->width * res->height; i++)
      px[i] = (uint8_t)(k * 31 + c * 7 + (int)i * i);
    imgstat_partial_init(&res->partial[c]);
    imgstat_partial_scan(&res->partial[c], px, IMGSTAT_U8, 0,
                         res->width * res->height);
  }
}

/* The report of inputs [lo, hi), table of 5 rows, 2 files a reason. */
static imgstat_report *report_of(int lo, int hi) {
  imgstat_report_options o;
  memset(&o, 0, sizeof o);
  o.table_max = 5;
  o.list_max = 2;
  imgstat_report *r = NULL;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_report_create(&o, &r, &err), IMGSTAT_OK);
  for (int k = lo; k < hi; k++) {
    imgstat_job_result res;
    result_of(k, &res);
    char name[32];
    /* (names of 1 byte too: the rows' least bytes) */
    snprintf(name, sizeof name, k % 4 ? "dir/img%02d.png" : "%c", 'a' + k);
    CU_ASSERT_EQUAL(imgstat_report_add(r, (uint64_t)k, name, &res, 0, &err),
                    IMGSTAT_OK);
  }
  return r;
}

static void serialize(const imgstat_report *r, void **buf, size_t *n) {
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_report_serialize(r, buf, n, &err), IMGSTAT_OK);
}

static const imgstat_report_options *bounds(void) {
  static imgstat_report_options o;
  o.table_max = 5;
  o.list_max = 2;
  return &o;
}

static void test_split_merge(void) {
  imgstat_report *all = report_of(0, N);
  void *want = NULL;
  size_t nwant = 0;
  serialize(all, &want, &nwant);
  /* split at every place into two and three parts */
  for (int a = 0; a <= N; a++)
    for (int b = a; b <= N; b += 4) {
      int cut[4] = {0, a, b, N};
      imgstat_report *first = report_of(0, a);
      for (int p = 1; p < 3; p++) {
        imgstat_report *part = report_of(cut[p], cut[p + 1]), *back = NULL;
        void *buf = NULL;
        size_t n = 0;
        serialize(part, &buf, &n);
        imgstat_report_destroy(part);
        imgstat_error err = {0};
        CU_ASSERT_EQUAL_FATAL(
            imgstat_report_deserialize(buf, n, bounds(), &back, &err),
            IMGSTAT_OK);
        free(buf);
        CU_ASSERT_EQUAL(imgstat_report_merge(first, back, &err), IMGSTAT_OK);
        imgstat_report_destroy(back);
      }
      void *got = NULL;
      size_t ngot = 0;
      serialize(first, &got, &ngot);
      CU_ASSERT(ngot == nwant && memcmp(got, want, nwant) == 0);
      free(got);
      imgstat_report_destroy(first);
    }
  free(want);
  imgstat_report_destroy(all);
}

/* Bytes with their checksum made valid again. */
static void reseal(uint8_t *buf, size_t n) {
  uint8_t *p = buf + n - 8;
  ist_le_put64(&p, ist_fnv1a(buf, n - 8));
}

static int refused(const void *buf, size_t n) {
  imgstat_report *r = NULL;
  imgstat_error err = {0};
  imgstat_status s = imgstat_report_deserialize(buf, n, bounds(), &r, &err);
  imgstat_report_destroy(r);
  return s == IMGSTAT_ERR_FORMAT && r == NULL &&
         strstr(err.message, "serialized imgstat report") != NULL;
}

static void test_damaged(void) {
  imgstat_report *all = report_of(0, N);
  uint8_t *buf = NULL;
  size_t n = 0;
  serialize(all, (void **)&buf, &n);
  imgstat_report_destroy(all);
  uint8_t *copy = malloc(n);
  CU_ASSERT_FATAL(copy != NULL);
  int bad = 0;
  for (size_t k = 0; k < n; k++) /* every truncation */
    bad += !refused(buf, k);
  for (size_t k = 0; k < n; k++) { /* every byte flipped */
    memcpy(copy, buf, n);
    copy[k] ^= 0x5a;
    bad += !refused(copy, n);
  }
  CU_ASSERT_EQUAL(bad, 0);
  /* a valid checksum over wrong counts: each u64 of the header (the
   * version, inputs, failed, the backends' counts, wide, max_channels,
   * nimages) made huge, or off by one */
  for (size_t at = 8; at < 8 + 9 * 8; at += 8)
    for (int d = 0; d < 3; d++) {
      if ((at == 56 || at == 64) && d > 0)
        continue; /* wide images and the most channels: only bounded */
      memcpy(copy, buf, n);
      uint8_t *p = copy + at;
      const uint8_t *q = copy + at;
      uint64_t v = ist_le_get64(&q);
      ist_le_put64(&p, d == 0 ? UINT64_MAX : d == 1 ? v + 1 : v - 1);
      reseal(copy, n);
      if (!refused(copy, n)) {
        printf("\n  accepted: field at %zu, change %d\n", at, d);
        bad++;
      }
    }
  CU_ASSERT_EQUAL(bad, 0);
  /* more rows than the bounds allow (a reader of a smaller table) */
  imgstat_report *r = NULL;
  imgstat_error err = {0};
  imgstat_report_options small = *bounds();
  small.table_max = 4;
  CU_ASSERT_EQUAL(imgstat_report_deserialize(buf, n, &small, &r, &err),
                  IMGSTAT_ERR_FORMAT);
  CU_ASSERT(r == NULL);
  /* the intact bytes are read */
  CU_ASSERT_EQUAL(imgstat_report_deserialize(buf, n, bounds(), &r, &err),
                  IMGSTAT_OK);
  imgstat_report_destroy(r);
  free(copy);
  free(buf);
}

static const test_case tests[] = {
    {"report serialized form", NULL},
    {"split anywhere, serialized, merged in order = one report",
     test_split_merge},
    {"damaged bytes refused", test_damaged},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
