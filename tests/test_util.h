/* Helpers shared by the CUnit test programs. */
#ifndef IMGSTAT_TEST_UTIL_H
#define IMGSTAT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* 1 in a build with AddressSanitizer, whose shadow memory needs terabytes of
 * address space: tests then leave RLIMIT_AS alone. */
#if defined(__SANITIZE_ADDRESS__)
#define IMGSTAT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IMGSTAT_TEST_ASAN 1
#endif
#endif
#ifndef IMGSTAT_TEST_ASAN
#define IMGSTAT_TEST_ASAN 0
#endif

/* The shared corpus folder ($IMGSTAT_CORPUS, else ../shared/corpus beside the
 * checkout) when it exists, else NULL: tests over it then report a skip. */
const char *test_corpus_dir(void);

/* The project's own test data folder (tests/data). */
const char *test_data_dir(void);

/* Joins a folder and a name into a static buffer (one call at a time). */
const char *test_path(const char *dir, const char *name);

/* A deterministic pseudo-random generator (xorshift64*) for test inputs. */
uint64_t test_rand(uint64_t *state);

/* Runs the registered CUnit suites with the basic interface; returns the
 * process exit status: 0 when everything ran and passed, 1 otherwise. */
int test_run_all(void);

/* Prints "skipped: REASON" in a way ctest shows and returns 77. */
int test_skip(const char *reason);

#endif
