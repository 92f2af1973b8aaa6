/*
 * Numbers in the C locale whatever locale the process has set: a program
 * that links the library and calls setlocale with a locale whose decimal
 * point is a comma (IMGSTAT_TEST_COMMA_LOCALE, made by
 * tests/core/number_locale_test.sh) reads FITS cards and the PFM scale, and
 * writes records (text, JSON, CSV, percentiles and histograms), messages and
 * number texts byte for byte as in the C locale, with the values worked out
 * by hand here. Skips (77) when no such locale can be set.
 */
#include "imgstat/record.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *comma_locale;

/* Sets the process's locale: the comma one (comma 1) or C. */
static void set_locale(int comma) {
  CU_ASSERT_PTR_NOT_NULL_FATAL(setlocale(LC_ALL, comma ? comma_locale : "C"));
  CU_ASSERT_EQUAL_FATAL(localeconv()->decimal_point[0], comma ? ',' : '.');
}

/* ---- files written here ---------------------------------------------------
 */

static char fits_scaled[512], fits_half[512], pfm_path[512];

/* A FITS file of 2 x 2 samples: cards (each "KEY = VALUE", "" ends them),
 * then the data, each padded to 2880 bytes. */
static int write_fits(const char *path, const char *const *cards,
                      const unsigned char *data, size_t size) {
  char block[2880 * 2];
  memset(block, ' ', sizeof block);
  size_t n = 0;
  for (; cards[n]; n++) {
    char card[81];
    snprintf(card, sizeof card, "%-80s", cards[n]);
    memcpy(block + 80 * n, card, 80);
  }
  memcpy(block + 80 * n, "END", 3);
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  unsigned char pad[2880] = {0};
  int ok = fwrite(block, 1, 2880, f) == 2880 &&
           fwrite(data, 1, size, f) == size &&
           fwrite(pad, 1, 2880 - size, f) == 2880 - size;
  return fclose(f) == 0 && ok;
}

static int write_files(void) {
  const char *tmp = test_tmp_dir();
  long pid = (long)getpid();
  snprintf(fits_scaled, sizeof fits_scaled, "%s/number_locale_%ld_a.fits", tmp,
           pid);
  snprintf(fits_half, sizeof fits_half, "%s/number_locale_%ld_b.fits", tmp,
           pid);
  snprintf(pfm_path, sizeof pfm_path, "%s/number_locale_%ld.pfm", tmp, pid);
  /* 8-bit 0, 1, 2, 3 scaled: 10.5, 13, 15.5, 18 (mean 14.25) */
  const char *scaled[] = {
      "SIMPLE  =                    T", "BITPIX  =                    8",
      "NAXIS   =                    2", "NAXIS1  =                    2",
      "NAXIS2  =                    2", "BSCALE  =                  2.5",
      "BZERO   =                 10.5", NULL};
  const unsigned char u8[4] = {0, 1, 2, 3};
  /* 16-bit 1, 2, 3, 4 (big-endian) halved, plus 1.05D1 (FITS's exponent
   * letter): 11, 11.5, 12, 12.5 (mean 11.75) */
  const char *half[] = {
      "SIMPLE  =                    T", "BITPIX  =                   16",
      "NAXIS   =                    2", "NAXIS1  =                    2",
      "NAXIS2  =                    2", "BSCALE  =                  0.5",
      "BZERO   =               1.05D1", NULL};
  const unsigned char i16[8] = {0, 1, 0, 2, 0, 3, 0, 4};
  /* PFM, gray, little-endian (scale -1.0): 1.5, 2.25 (mean 1.875) */
  FILE *f = fopen(pfm_path, "wb");
  if (!f)
    return 0;
  const unsigned char le[8] = {0, 0, 0xc0, 0x3f, 0, 0, 0x10, 0x40};
  int ok = fputs("Pf\n2 1\n-1.0\n", f) >= 0 && fwrite(le, 1, 8, f) == 8;
  ok = (fclose(f) == 0) && ok;
  return ok && write_fits(fits_scaled, scaled, u8, sizeof u8) &&
         write_fits(fits_half, half, i16, sizeof i16);
}

static int remove_files(void) {
  remove(fits_scaled);
  remove(fits_half);
  remove(pfm_path);
  return 0;
}

/* ---- records ----------------------------------------------------------------
 */

static const imgstat_record_hist hist = {
    .fields = 1, .npercentiles = 2, .percentiles = {12.5, 50}, .bins = 4};

/* The records of path in every format (text, JSON, CSV with its header),
 * with histograms and the percentiles 12.5 and 50: a malloc'd text, or the
 * load error's message. */
static char *records_of(const char *path) {
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  o.backend = IMGSTAT_BACKEND_CPU;
  o.threads = 1;
  imgstat_engine *e = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_engine_create(&o, &e, &err) != IMGSTAT_OK)
    return strdup(err.message);
  imgstat_stats_request req;
  memset(&req, 0, sizeof req);
  req.histograms = 1;
  req.npercentiles = hist.npercentiles;
  memcpy(req.percentiles, hist.percentiles, sizeof req.percentiles);
  imgstat_job_result res;
  char *buf = NULL;
  size_t size = 0;
  if (imgstat_engine_stats(e, path, NULL, &req, &res) != IMGSTAT_OK) {
    buf = strdup(res.error.message);
  } else {
    FILE *f = open_memstream(&buf, &size);
    imgstat_record rec;
    imgstat_record_from_job(&rec, "x", &res, 0, &hist, 0);
    imgstat_record_write(f, IMGSTAT_RECORD_TEXT, &rec, 0);
    imgstat_record_write(f, IMGSTAT_RECORD_JSON, &rec, 0);
    imgstat_record_begin(f, IMGSTAT_RECORD_CSV, &hist, 0);
    imgstat_record_write(f, IMGSTAT_RECORD_CSV, &rec, 0);
    fclose(f);
  }
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);
  return buf;
}

/* The records of path in the comma locale equal those in C, and hold each
 * of the JSON texts in want (the values worked out by hand). */
static void check_records(const char *path, const char *const *want) {
  set_locale(0);
  char *c = records_of(path);
  set_locale(1);
  char *comma = records_of(path);
  set_locale(0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  CU_ASSERT_PTR_NOT_NULL_FATAL(comma);
  if (strcmp(c, comma) != 0)
    printf("\nC locale:\n%s\ncomma locale:\n%s\n", c, comma);
  CU_ASSERT_STRING_EQUAL(comma, c);
  for (; *want; want++) {
    if (!strstr(comma, *want))
      printf("\nno %s in:\n%s\n", *want, comma);
    CU_ASSERT_PTR_NOT_NULL(strstr(comma, *want));
  }
  free(c);
  free(comma);
}

/* BSCALE 2.5, BZERO 10.5: 10.5, 13, 15.5, 18. */
static void test_fits_scaled(void) {
  const char *want[] = {"\"mean\":14.25",
                        "\"min\":10.5",
                        "\"max\":18",
                        "\"sum\":57",
                        "\"percentiles\":{\"12.5\":",
                        "median,p12.5,p50,",
                        "14.2500",
                        NULL};
  check_records(fits_scaled, want);
}

/* BSCALE 0.5 (read as 0 in a comma locale, and refused), BZERO 1.05D1:
 * 11, 11.5, 12, 12.5. */
static void test_fits_half(void) {
  const char *want[] = {"\"mean\":11.75", "\"min\":11", "\"max\":12.5",
                        "\"sum\":47", NULL};
  check_records(fits_half, want);
}

/* The PFM scale -1.0: 1.5 and 2.25. */
static void test_pfm(void) {
  const char *want[] = {"\"mean\":1.875", "\"min\":1.5", "\"max\":2.25",
                        "\"sum\":3.75", NULL};
  check_records(pfm_path, want);
}

/* ---- the grammar and its printing twin ------------------------------------
 */

static void test_number_read(void) {
  set_locale(1);
  double v = 0;
  CU_ASSERT_EQUAL(imgstat_number_read("2.5", &v), 3);
  CU_ASSERT_EQUAL(v, 2.5);
  CU_ASSERT_EQUAL(imgstat_number_read("-12.5e-1,7", &v), 8);
  CU_ASSERT_EQUAL(v, -1.25);
  CU_ASSERT_EQUAL(imgstat_number_read(".5}", &v), 2);
  CU_ASSERT_EQUAL(v, 0.5);
  /* the grammar's characters only: not hexadecimal */
  CU_ASSERT_EQUAL(imgstat_number_read("0x1p3", &v), 1);
  CU_ASSERT_EQUAL(v, 0);
  CU_ASSERT_EQUAL(imgstat_number_read("2,5", &v), 1);
  CU_ASSERT_EQUAL(v, 2);
  CU_ASSERT_EQUAL(imgstat_number_read(",5", &v), 0);
  CU_ASSERT_EQUAL(imgstat_number_read("1e999", &v), 5);
  CU_ASSERT_TRUE(isinf(v));
  set_locale(0);
}

static void test_number_print(void) {
  set_locale(1);
  char buf[64];
  imgstat_number_snprintf(buf, sizeof buf, "%.17g %.4f %g %.1e", 0.1, 24.25,
                          12.5, 1500.0);
  CU_ASSERT_STRING_EQUAL(buf, "0.10000000000000001 24.2500 12.5 1.5e+03");
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  imgstat_number_fprintf(f, "%9.4f|%.0f", 0.5, 2.0);
  fclose(f);
  CU_ASSERT_STRING_EQUAL(text, "   0.5000|2");
  free(text);
  imgstat_record_format_double(buf, sizeof buf, 0.1);
  CU_ASSERT_STRING_EQUAL(buf, "0.1");
  /* the library's messages */
  imgstat_error err;
  imgstat_error_set(&err, IMGSTAT_ERR_ARG, "got %g", 0.5);
  CU_ASSERT_STRING_EQUAL(err.message, "got 0.5");
  set_locale(0);
}

/* Records written from several threads at once (as the batch's workers
 * write them), while the process's locale is the comma one: each thread
 * prints with a point, and gets its own locale back. */
static void *print_many(void *arg) {
  char *out = arg;
  for (int i = 0; i < 2000; i++) {
    char buf[32];
    imgstat_record_format_double(buf, sizeof buf, 1.0 + i / 8.0);
    double back = 0;
    if (imgstat_number_read(buf, &back) != strlen(buf) ||
        back != 1.0 + i / 8.0 || strchr(buf, ',')) {
      snprintf(out, 64, "%s", buf);
      return NULL;
    }
  }
  /* the thread's locale is the process's again: a comma */
  snprintf(out, 64, "%.1f", 0.5);
  return NULL;
}

static void test_threads(void) {
  set_locale(1);
  enum { N = 4 };
  pthread_t t[N];
  char out[N][64];
  for (int i = 0; i < N; i++)
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, print_many, out[i]), 0);
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    CU_ASSERT_STRING_EQUAL(out[i], "0,5");
  }
  set_locale(0);
}

int main(void) {
  comma_locale = getenv("IMGSTAT_TEST_COMMA_LOCALE");
  if (!comma_locale || !*comma_locale)
    comma_locale = "de_DE.UTF-8";
  if (!setlocale(LC_ALL, comma_locale) ||
      strcmp(localeconv()->decimal_point, ",") != 0)
    return test_skip("no locale with a decimal comma (tests/"
                     "number_locale_test.sh makes one with localedef)");
  setlocale(LC_ALL, "C");
  if (!write_files()) {
    remove_files();
    fprintf(stderr, "cannot write the test files in %s\n", test_tmp_dir());
    return 1;
  }
  static const test_case tests[] = {{"number_locale", NULL},
                                    {"number_read", test_number_read},
                                    {"number_print", test_number_print},
                                    {"fits_scaled", test_fits_scaled},
                                    {"fits_half", test_fits_half},
                                    {"pfm", test_pfm},
                                    {"threads", test_threads},
                                    {NULL, NULL}};
  int status = test_main(tests);
  remove_files();
  return status;
}
