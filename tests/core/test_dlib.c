/* The loader of the libraries loaded when needed (src/core/dlib.c) against
 * the system's dynamic loader: a file that is not there fails with the
 * loader's own reason and the soname, every later call the same; the next
 * file of the row is tried; a symbol the file lacks is named; the one
 * environment variable for the tests of a missing library; --version's
 * entry. libm stands for a library (its cos is checked by calling it). */
#include "dlib.h"
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MISSING "libimgstat-test-missing.so.1"

#define COS_SYMBOLS(X) X(cos)
IST_DLIB_TABLE(cosine, COS_SYMBOLS);
#define NONE_SYMBOLS(X) X(imgstat_test_no_such_symbol)
IST_DLIB_TABLE(none, NONE_SYMBOLS);

static void test_missing_file(void) {
  static const char *const files[] = {MISSING, NULL};
  ist_dlib lib = IST_DLIB_ROW(cosine, "TEST", "libtest", files, 0);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_dlib_need(&lib, &err), IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "TEST needs " MISSING
                                             ", which could not be loaded: "));
  /* the dynamic loader's reason names the file too */
  const char *why = strstr(err.message, "loaded: ");
  CU_ASSERT(why && strstr(why, MISSING));
  char first[IMGSTAT_ERROR_MAX];
  snprintf(first, sizeof first, "%s", err.message);
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_dlib_need(&lib, &err), IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT_STRING_EQUAL(err.message, first);
  CU_ASSERT_PTR_NOT_NULL(ist_dlib_why(&lib));
  CU_ASSERT_EQUAL(ist_dlib_need(&lib, NULL), IMGSTAT_ERR_UNSUPPORTED);
}

static void test_next_file(void) {
  static const char *const files[] = {MISSING, "libm.so.6", NULL};
  ist_dlib lib = IST_DLIB_ROW(cosine, "TEST", "libtest", files, 0);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL_FATAL(ist_dlib_need(&lib, &err), IMGSTAT_OK);
  CU_ASSERT_PTR_NULL(ist_dlib_why(&lib));
  double (*loaded_cos)(double) = IST_DLIB_FN(cosine, cos);
  CU_ASSERT_EQUAL(loaded_cos(0.0), 1.0);
  CU_ASSERT_EQUAL(loaded_cos(acos(-1.0)), -1.0);
  char text[256];
  size_t at = 0;
  CU_ASSERT(ist_dlib_describe(&lib, text, sizeof text, &at));
  CU_ASSERT_STRING_EQUAL(text, MISSING " (TEST)");
}

static void test_missing_symbol(void) {
  static const char *const files[] = {"libm.so.6", NULL};
  ist_dlib lib = IST_DLIB_ROW(none, "TEST", "libtest", files, 0);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_dlib_need(&lib, &err), IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT_STRING_EQUAL(err.message,
                         "TEST needs libm.so.6, which could not be loaded: "
                         "libm.so.6 has no imgstat_test_no_such_symbol");
  char text[512];
  size_t at = 0;
  CU_ASSERT(ist_dlib_describe(&lib, text, sizeof text, &at));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "libm.so.6 (TEST): NOT LOADABLE: TEST "
                                      "needs libm.so.6"));
}

static void test_disabled(void) {
  static const char *const files[] = {"libm.so.6", NULL};
  ist_dlib lib = IST_DLIB_ROW(cosine, "TEST", "libtest", files, 0);
  ist_dlib other = IST_DLIB_ROW(cosine, "TEST", "libtes", files, 0);
  setenv("IMGSTAT_DLOPEN_DISABLE", "libother,libtest", 1);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_dlib_need(&lib, &err), IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT_STRING_EQUAL(err.message,
                         "TEST needs libm.so.6, which could not be loaded: "
                         "disabled by IMGSTAT_DLOPEN_DISABLE");
  /* a whole word of the list only */
  CU_ASSERT_EQUAL(ist_dlib_need(&other, &err), IMGSTAT_OK);
  unsetenv("IMGSTAT_DLOPEN_DISABLE");
}

static const test_case tests[] = {
    {"dlib", NULL},
    {"a file that is not there: the loader's reason, every call",
     test_missing_file},
    {"the next file of the row", test_next_file},
    {"a symbol the file lacks", test_missing_symbol},
    {"IMGSTAT_DLOPEN_DISABLE", test_disabled},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
