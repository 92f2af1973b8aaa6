/*
 * `imgstat normalize`: the command line of normalization
 * (programs/imgstat/normalize_cmd.c). main dispatches `imgstat normalize
 * ARGS...` here with argv[0] == "normalize".
 */
#ifndef IMGSTAT_NORMALIZE_CLI_H
#define IMGSTAT_NORMALIZE_CLI_H

/* Runs the command and returns the process exit status: 0 every input
 * written, 1 an input failed (the others are still written), 2 usage error,
 * 130 interrupted (Ctrl-C; no partial file is left). Prints its own
 * messages ("imgstat: PATH: reason"). */
int ist_normalize_main(int argc, char **argv);

#endif /* IMGSTAT_NORMALIZE_CLI_H */
