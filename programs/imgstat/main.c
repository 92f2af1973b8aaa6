/*
 * imgstat: the command-line program. main only picks the subcommand; each
 * one parses its options (options.c), runs its jobs through the library and
 * prints (stats_cmd.c, normalize_cmd.c, bench_cmd.c). The command line is
 * the only part of imgstat that prints or exits.
 */
#include "bench_cmd.h"
#include "normalize_cmd.h"
#include "stats_cmd.h"

#include <string.h>

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
  if (argc >= 2)
    for (size_t k = 0; k < sizeof subcommands / sizeof *subcommands; k++)
      if (strcmp(argv[1], subcommands[k].name) == 0)
        return subcommands[k].main(argc - 1, argv + 1);
  return ist_stats_main(argc, argv);
}
