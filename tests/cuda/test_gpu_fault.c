/*
 * The syntax of IMGSTAT_GPU_FAULT (cuda/gpu_fault.h), which needs no GPU:
 * every accepted form with the event it names, and the malformed values that
 * must be refused (imgstat_gpu_create then fails rather than run without the
 * fault a test asked for). The faults themselves are tested on the GPU
 * machine by tests/gpu/checks/fault_test.sh.
 */
#include "gpu_fault.h"
#include "test_util.h"

#include <CUnit/Basic.h>

static const unsigned BOTH = IMGSTAT_GPU_FAULT_ALLOC | IMGSTAT_GPU_FAULT_LAUNCH;

static void test_valid(void) {
  static const struct {
    const char *text;
    unsigned kinds;
    uint64_t n;
    int point;
  } cases[] = {
      {NULL, 0, 0, 0},
      {"", 0, 0, 0},
      {"0", 0, 0, 0},
      {"000", 0, 0, 0},
      {"alloc:0", 0, 0, 0},
      {"launch:0", 0, 0, 0},
      {"1", BOTH, 1, 0},
      {"17", BOTH, 17, 0},
      {"007", BOTH, 7, 0},
      {"alloc:1", IMGSTAT_GPU_FAULT_ALLOC, 1, 0},
      {"alloc:250", IMGSTAT_GPU_FAULT_ALLOC, 250, 0},
      {"launch:3", IMGSTAT_GPU_FAULT_LAUNCH, 3, 0},
      {"999999999999999999", BOTH, UINT64_C(999999999999999999), 0},
      {"start:context", IMGSTAT_GPU_FAULT_START, 1, IST_GPU_START_CONTEXT},
      {"start:handles", IMGSTAT_GPU_FAULT_START, 1, IST_GPU_START_HANDLES},
      {"start:decoder:3", IMGSTAT_GPU_FAULT_START, 3, IST_GPU_START_DECODER},
      {"start:state:2", IMGSTAT_GPU_FAULT_START, 2, IST_GPU_START_STATE},
      {"start:state:0", 0, 0, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    ist_gpu_fault f = {99, 99, 99};
    CU_ASSERT_EQUAL(ist_gpu_fault_parse(cases[k].text, &f), 1);
    CU_ASSERT_EQUAL(f.kinds, cases[k].kinds);
    CU_ASSERT_EQUAL(f.n, cases[k].n);
    CU_ASSERT_EQUAL(f.point, cases[k].point);
  }
}

static void test_malformed(void) {
  /* the last one has 19 digits: refused, not wrapped around */
  static const char *const bad[] = {
      "x",
      "-1",
      "+1",
      " 1",
      "1 ",
      "1e3",
      "0x10",
      "1.5",
      "alloc",
      "alloc:",
      "launch:",
      "alloc:x",
      "alloc:-2",
      "launch: 4",
      "alloc3",
      "Alloc:3",
      "3:alloc",
      "malloc:3",
      "alloc:launch:1",
      "1234567890123456789",
      "start",
      "start:",
      "start:1",
      "start:stream",
      "start:contexts",
      "start:context:",
      "start:context:x",
      "start:state:-1",
      "start:state:1:2",
      "Start:state",
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    ist_gpu_fault f = {99, 99, 99};
    CU_ASSERT_EQUAL(ist_gpu_fault_parse(bad[k], &f), 0);
    /* a refused value injects nothing */
    CU_ASSERT_EQUAL(f.kinds, 0);
    CU_ASSERT_EQUAL(f.n, 0);
    CU_ASSERT_EQUAL(f.point, 0);
  }
}

static const test_case tests[] = {{"IMGSTAT_GPU_FAULT", NULL},
                                  {"accepted values", test_valid},
                                  {"malformed values", test_malformed},
                                  {NULL, NULL}};

int main(void) { return test_main(tests); }
