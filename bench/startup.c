/*
 * Whole-process start-up: each command run RUNS times, the commands in
 * turn (A B C A B C ...: a drift of the machine's speed reaches them all),
 * started with posix_spawn, its output to /dev/null, timed from the spawn
 * to the reap on the monotonic clock. Prints each command's median, min
 * and max in microseconds and the median's ratio to the first command's.
 * A command that fails (exit status other than 0) stops the program.
 *
 *   bench_startup RUNS '/bin/true' 'build/imgstat tiny.png' ...
 *
 * Each command is one string split at spaces (no quoting). bench/startup.sh
 * drives it (docs/benchmarks.md, "Start-up").
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_WORDS 32

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RUNS 'COMMAND ARGS' ...\n", argv[0]);
    return 2;
  }
  int runs = atoi(argv[1]), ncmd = argc - 2;
  if (runs < 1) {
    fprintf(stderr, "RUNS must be at least 1\n");
    return 2;
  }
  char *words[16][MAX_WORDS + 1];
  if (ncmd > 16) {
    fprintf(stderr, "at most 16 commands\n");
    return 2;
  }
  for (int c = 0; c < ncmd; c++) {
    int n = 0;
    for (char *w = strtok(argv[c + 2], " "); w && n < MAX_WORDS;
         w = strtok(NULL, " "))
      words[c][n++] = w;
    words[c][n] = NULL;
  }
  double *us = calloc((size_t)runs * (size_t)ncmd, sizeof *us);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (!us)
    return 1;
  /* one warm-up run of each (the page cache), then the timed runs */
  for (int r = -1; r < runs; r++) {
    for (int c = 0; c < ncmd; c++) {
      pid_t pid;
      int st = 0;
      double t0 = now_us();
      if (posix_spawn(&pid, words[c][0], &fa, NULL, words[c], environ) != 0 ||
          waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
          WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: could not be run, or failed\n", words[c][0]);
        return 1;
      }
      if (r >= 0)
        us[(size_t)c * (size_t)runs + (size_t)r] = now_us() - t0;
    }
  }
  double base = 0;
  printf("%-44s %9s %9s %9s %7s\n", "command", "median_us", "min_us", "max_us",
         "ratio");
  for (int c = 0; c < ncmd; c++) {
    double *v = us + (size_t)c * (size_t)runs;
    qsort(v, (size_t)runs, sizeof *v, cmp);
    double med = v[runs / 2];
    if (c == 0)
      base = med;
    char name[256] = "";
    for (int i = 0; words[c][i]; i++) {
      strncat(name, i ? " " : "", sizeof name - strlen(name) - 1);
      strncat(name, words[c][i], sizeof name - strlen(name) - 1);
    }
    printf("%-44s %9.0f %9.0f %9.0f %7.2f\n", name, med, v[0], v[runs - 1],
           base > 0 ? med / base : 0);
  }
  posix_spawn_file_actions_destroy(&fa);
  free(us);
  return 0;
}
