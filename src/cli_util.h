/*
 * What the command-line files (main.c, normalize_cli.c, histogram_cli.c)
 * share: the usage-error message and strict number parsing. Part of the
 * program, not of the library: usage errors print.
 */
#ifndef IMGSTAT_CLI_UTIL_H
#define IMGSTAT_CLI_UTIL_H

#include <stdint.h>

/* The exit status of a usage error. */
#define IMGSTAT_EXIT_USAGE 2

/* Prints "imgstat: <prefix><message>" and a line pointing at "<command>
 * --help" to stderr; returns IMGSTAT_EXIT_USAGE. prefix is "" for the main
 * command or e.g. "normalize: "; command is e.g. "imgstat normalize". */
int imgstat_cli_usage_error(const char *prefix, const char *command,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A decimal number in [lo, hi] with nothing around it (no sign, no spaces,
 * no suffix). Returns 1 and sets *out, or 0 and leaves it. */
int imgstat_cli_parse_uint(const char *s, uint64_t lo, uint64_t hi,
                           uint64_t *out);

/* A size in bytes in [lo, hi]: a decimal number, alone (bytes) or followed
 * by one of the binary units K, M, G, T (2^10, 2^20, 2^30, 2^40; either
 * case, optionally spelled KiB, MiB, ...), with nothing else around it.
 * Returns 1 and sets *out, or 0 (also on overflow) and leaves it. */
int imgstat_cli_parse_size(const char *s, uint64_t lo, uint64_t hi,
                           uint64_t *out);
/* What a value of imgstat_cli_parse_size(s, 1, UINT64_MAX, ...) is, for the
 * usage error of a refused one. */
#define IMGSTAT_CLI_SIZE_EXPECTED                                              \
  "a number of bytes (at least 1), alone or followed by K, M, G or T "         \
  "(binary units: 1K = 1024)"

#endif
