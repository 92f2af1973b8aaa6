/*
 * A main() for the libFuzzer targets (tests/fuzz/fuzz_*.c) without libFuzzer:
 * runs LLVMFuzzerTestOneInput once on each file named on the command line, and
 * on each regular file in a named folder and its subfolders, in name order. So
 * the seed files and the fuzzers' regression inputs can be replayed in any
 * build: by ctest (fuzz_replay, under ASan in CI's sanitizer build) and under
 * valgrind (tests/tools/valgrind.sh), which sees what ASan cannot: reads of
 * uninitialised memory.
 *
 *   replay_pipeline [-v] FILE_OR_FOLDER...
 *
 * Exit status 0 when every input ran (a target that finds a broken invariant
 * crashes), 2 when an argument cannot be read. -v names each file first.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int verbose;
static unsigned long ran;

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 2;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fprintf(stderr, "%s: out of memory\n", path);
      fclose(f);
      return 2;
    }
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap)
      break;
    uint8_t *bigger = realloc(buf, cap * 2);
    if (!bigger)
      free(buf);
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "%s: read error\n", path);
    free(buf);
    return 2;
  }
  if (verbose)
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  /* An exact-size copy, as libFuzzer passes it, so that ASan and valgrind
   * see a read past the end. */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(buf);
    return 2;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  ran++;
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    perror(path);
    return 2;
  }
  if (!S_ISDIR(st.st_mode))
    return S_ISREG(st.st_mode) ? run_file(path) : 0;
  DIR *d = opendir(path);
  if (!d) {
    perror(path);
    return 2;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **more = realloc(names, cap * sizeof *names);
      if (!more) {
        rc = 2;
        break;
      }
      names = more;
    }
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) {
      rc = 2;
      break;
    }
    snprintf(names[n], len, "%s/%s", path, e->d_name);
    n++;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    if (rc == 0)
      rc = run_path(names[i]);
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  int first = 1;
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    verbose = 1;
    first = 2;
  }
  if (first >= argc) {
    fprintf(stderr, "usage: %s [-v] FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  for (int i = first; i < argc; i++) {
    int rc = run_path(argv[i]);
    if (rc)
      return rc;
  }
  fprintf(stderr, "%s: %lu inputs ran\n", argv[0], ran);
  return 0;
}
