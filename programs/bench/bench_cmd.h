/*
 * `imgstat bench`: the GPU benchmark's command line
 * (programs/bench/bench_cmd.c). main dispatches `imgstat bench ARGS...` here
 * with argv[0] == "bench".
 */
#ifndef IMGSTAT_BENCH_CLI_H
#define IMGSTAT_BENCH_CLI_H

/* Runs the benchmark and returns the process exit status (0 ok, 1 failure,
 * 2 usage error). */
int ist_bench_main(int argc, char **argv);

#endif /* IMGSTAT_BENCH_CLI_H */
