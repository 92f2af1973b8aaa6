#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *test_corpus_dir(void) {
  const char *dir = getenv("IMGSTAT_CORPUS");
  if (!dir || !*dir)
    dir = IMGSTAT_CORPUS_DEFAULT;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return NULL;
  return dir;
}

const char *test_data_dir(void) { return IMGSTAT_TEST_DATA; }

const char *test_path(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

uint64_t test_rand(uint64_t *state) {
  uint64_t x = *state ? *state : 0x9E3779B97F4A7C15u;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Du;
}

int test_run_all(void) {
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() +
                    CU_get_number_of_suites_failed() +
                    CU_get_number_of_tests_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  return (failed == 0 && ran > 0) ? 0 : 1;
}

int test_skip(const char *reason) {
  printf("skipped: %s\n", reason);
  fflush(stdout);
  return 77;
}
