/* The CUnit runner shared by the test programs: a program lists its suites
 * and tests as data (a table of test_case) and its main returns
 * test_main's status. IMGSTAT_TEST_ONLY=TEXT registers only the tests whose
 * name contains TEXT (to run one test under a slow tool such as
 * compute-sanitizer). */
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int test_main_init(const test_case *tests, int (*init)(void),
                   int (*clean)(void)) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = NULL;
  const char *only = getenv("IMGSTAT_TEST_ONLY");
  for (const test_case *t = tests; t->name; t++) {
    if (t->run && only && *only && !strstr(t->name, only))
      continue;
    if (!t->run)
      suite = CU_add_suite(t->name, init, clean);
    if (!suite || (t->run && !CU_add_test(suite, t->name, t->run))) {
      CU_cleanup_registry();
      return 1;
    }
  }
  return test_run_all();
}

int test_main(const test_case *tests) {
  return test_main_init(tests, NULL, NULL);
}

int test_skip(const char *reason) {
  printf("skipped: %s\n", reason);
  fflush(stdout);
  return 77;
}
