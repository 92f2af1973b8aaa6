/*
 * `imgstat [OPTIONS] FILE...`: the statistics command
 * (programs/imgstat/stats_cmd.c).
 */
#ifndef IMGSTAT_STATS_CMD_H
#define IMGSTAT_STATS_CMD_H

/* Runs the command on argv[1..argc-1] and returns the process exit status:
 * 0 every input processed, 1 an input failed or the output could not be
 * written, 2 usage error, 3 --verify found a mismatch. */
int ist_stats_main(int argc, char **argv);

/* The first line of its --help, which `imgstat` alone says too. */
#define IST_STATS_USAGE_LINE "Usage: imgstat [OPTIONS] FILE|DIR|-..."

#endif /* IMGSTAT_STATS_CMD_H */
