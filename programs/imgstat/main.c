/*
 * imgstat: the command-line program. main only picks the subcommand; each
 * one parses its options (options.c), runs its jobs through the library and
 * prints (stats_cmd.c, normalize_cmd.c, bench_cmd.c). The command line is
 * the only part of imgstat that prints or exits.
 */
#include "bench_cmd.h"
#include "cli_util.h"
#include "normalize_cmd.h"
#include "options.h"
#include "stats_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* glibc's malloc from the start at the thresholds its dynamic rule reaches
 * at most (mmap above 32 MiB, an arena's top given back above 64 MiB),
 * unless GLIBC_TUNABLES sets them. The rule otherwise settles at the sizes
 * a run frees most: with the 512 KiB 16-bit histograms that every image
 * and label of a dataset run hands from its worker to the printing thread,
 * that thread gave each worker's arena back to the system a few images at
 * a time (madvise, half of its samples) and the workers faulted it in again
 * (zeroed pages). A program's choice, not the library's. */
static void malloc_thresholds(void) {
#ifdef __GLIBC__
  const char *t = getenv("GLIBC_TUNABLES");
  if (t && (strstr(t, "mmap_threshold") || strstr(t, "trim_threshold")))
    return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

/* `imgstat NAME ARGS...` runs NAME's main with argv[0] == NAME; anything
 * else is the statistics command. The one place where subcommands are
 * added. */
static const struct subcommand {
  const char *name;
  int (*main)(int argc, char **argv);
} subcommands[] = {
    {"bench", ist_bench_main},
    {"normalize", ist_normalize_main},
};

int main(int argc, char **argv) {
  malloc_thresholds();
  if (argc < 2) {
    fputs(IST_STATS_USAGE_LINE "\n", stderr);
    return ist_cli_usage_error("", "imgstat", "no input files");
  }
  for (size_t k = 0; k < sizeof subcommands / sizeof *subcommands; k++)
    if (strcmp(argv[1], subcommands[k].name) == 0)
      return subcommands[k].main(argc - 1, argv + 1);
  /* A first word that names no file but is a near-miss of a subcommand
   * ("normalise") is a usage error, found before anything runs. */
  struct stat st;
  size_t n;
  if (argv[1][0] != '-' && stat(argv[1], &st) != 0)
    for (size_t k = 0; k < sizeof subcommands / sizeof *subcommands; k++)
      if (ist_opt_nearest(argv[1], strlen(argv[1]), subcommands[k].name, &n))
        return ist_cli_usage_error("", "imgstat",
                                   "%s: no such file or command (did you "
                                   "mean '%s'?)",
                                   argv[1], subcommands[k].name);
  return ist_stats_main(argc, argv);
}
