/* The CUnit runner shared by the test programs: a program lists its suites
 * and tests as data and its main returns test_main's status. */
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>

/* Runs what is registered and returns the exit status. */
static int run_registered(void) {
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failed = CU_get_number_of_failures() +
                    CU_get_number_of_suites_failed() +
                    CU_get_number_of_tests_failed();
  unsigned ran = CU_get_number_of_tests_run();
  CU_cleanup_registry();
  return (failed == 0 && ran > 0) ? 0 : 1;
}

int test_main(const test_suite *suites) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  for (const test_suite *s = suites; s->name; s++) {
    CU_pSuite suite = CU_add_suite(s->name, s->init, s->clean);
    if (!suite) {
      CU_cleanup_registry();
      return 1;
    }
    for (const test_case *t = s->tests; t->name; t++)
      if (!CU_add_test(suite, t->name, t->run)) {
        CU_cleanup_registry();
        return 1;
      }
  }
  return run_registered();
}

int test_main_suite(const char *name, const test_case *tests) {
  const test_suite suites[] = {{name, tests, NULL, NULL},
                               {NULL, NULL, NULL, NULL}};
  return test_main(suites);
}

int test_skip(const char *reason) {
  printf("skipped: %s\n", reason);
  fflush(stdout);
  return 77;
}
