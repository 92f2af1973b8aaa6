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
#include <string.h>
#include <sys/stat.h>

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
