/*
 * What the command-line files (the subcommands, options.c, output.c)
 * share: the usage-error message and strict number parsing. Part of the
 * program, not of the library: usage errors print.
 */
#ifndef IMGSTAT_CLI_UTIL_H
#define IMGSTAT_CLI_UTIL_H

#include "imgstat/engine.h"

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* The exit status of a usage error. */
#define IMGSTAT_EXIT_USAGE 2

/* Every message below goes to stderr in one write, with the formatted text
 * escaped for a terminal (IMGSTAT_ESCAPE_TEXT, output.h): a file name or an
 * option value holding control characters cannot reach the terminal raw. */

/* Prints "imgstat: <message>" and a line end. */
void ist_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Prints "imgstat: PATH: <message>" and a line end: the message of an input
 * or output file. */
void ist_cli_path_error(const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void ist_cli_path_verror(const char *path, const char *fmt, va_list ap);

/* Prints "imgstat: warning: <message>" and a line end: an option that has
 * no effect (options.h). */
void ist_cli_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* An error in the command line's words, into out (at least
 * IMGSTAT_CLI_WORDS_MAX bytes): the library's message with the setting its
 * cause names spelt as the option that sets it ("(max_pixels)" becomes
 * "(--max-pixels)", "verify needs a usable GPU" "--verify needs ..."); the
 * message as it is when it has no cause. Returns out. */
#define IMGSTAT_CLI_WORDS_MAX (IMGSTAT_ERROR_MAX + 32)
const char *ist_cli_error_words(const imgstat_error *err, char *out);

/* The reason an input failed, in the command line's words (out as above):
 * ist_cli_error_words, and a limit met while loading that no option sets
 * points at --max-pixels. */
const char *ist_cli_failure_words(const imgstat_job_result *res, char *out);

/* Prints the warnings of a job where they arose, unless quiet: "imgstat:
 * PATH: <warning>" for one about its input, "imgstat: <warning>" for one
 * about the engine. */
void ist_cli_job_warnings(const imgstat_job_result *res, const char *path,
                          int quiet);

/* Prints "imgstat: <prefix><message>" and a line pointing at "<command>
 * --help" to stderr; returns IMGSTAT_EXIT_USAGE. prefix is "" for the main
 * command or e.g. "normalize: "; command is e.g. "imgstat normalize". */
int ist_cli_usage_error(const char *prefix, const char *command,
                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int ist_cli_usage_verror(const char *prefix, const char *command,
                         const char *fmt, va_list ap);

/* A decimal number in [lo, hi] with nothing around it (no sign, no spaces,
 * no suffix). Returns 1 and sets *out, or 0 and leaves it. */
int ist_cli_parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* A size in bytes in [lo, hi]: a decimal number, alone (bytes) or followed
 * by one of the binary units K, M, G, T (2^10, 2^20, 2^30, 2^40; either
 * case, optionally spelled KiB, MiB, ...), with nothing else around it.
 * Returns 1 and sets *out, or 0 (also on overflow) and leaves it. */
int ist_cli_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* What a value of ist_cli_parse_size(s, 1, UINT64_MAX, ...) is, for the
 * usage error of a refused one. */
#define IMGSTAT_CLI_SIZE_EXPECTED                                              \
  "a number of bytes (at least 1), alone or followed by K, M, G or T "         \
  "(binary units: 1K = 1024)"

/* What ist_cli_parse_double found. */
enum {
  IMGSTAT_CLI_NUM_OK = 1,
  IMGSTAT_CLI_NUM_SYNTAX = 0, /* not a number */
  IMGSTAT_CLI_NUM_RANGE = -1  /* a number, but outside [lo, hi] (or beyond
                                 the largest double) */
};

/* s as a finite double, all of s being one number of imgstat_number_length's
 * grammar, in
 * [lo, hi]. Tiny values are numbers: 1e-308 (subnormal) is kept, 1e-400
 * rounds to 0, and both are then judged against [lo, hi]. Returns
 * IMGSTAT_CLI_NUM_OK and sets *out, or another IMGSTAT_CLI_NUM_ value and
 * leaves it. */
int ist_cli_parse_double(const char *s, double lo, double hi, double *out);

/* Up to max numbers separated by single commas (e.g. "1,99"; no empty
 * items, no spaces), each read by ist_cli_parse_double in [lo, hi].
 * Returns the count (>= 1), or IMGSTAT_CLI_NUM_SYNTAX (also for an empty
 * list or more than max items) or IMGSTAT_CLI_NUM_RANGE. */
int ist_cli_parse_double_list(const char *s, double lo, double hi, double *out,
                              int max);

/* ---- temporary files and signals ------------------------------------------
 * The writer (imgstat_image_write) keeps the path of its temporary file in
 * ist_cli_temp_slot() when given it as imgstat_write_options.temp_path.
 * ist_cli_cleanup_on_signals() makes every signal that would end the
 * process remove that file first. */

/* The slot for imgstat_write_options.temp_path. */
const char *volatile *ist_cli_temp_slot(void);

/* For HUP, INT, QUIT, PIPE, ALRM, TERM, USR1, USR2, XCPU, XFSZ, VTALRM and
 * PROF, each left at its default action (which ends the process): a handler
 * that unlinks the temporary named in the slot (async-signal-safe: unlink,
 * sigaction, raise) and then re-raises the signal with its default action,
 * so that the process dies of it and its exit status says which. Signals
 * that are ignored (nohup, a script's background job) or have a handler
 * already are left alone. */
void ist_cli_cleanup_on_signals(void);

/* Several writers at once (one per worker): a slot of its own for each
 * write, claimed before it and given back after (NULL when every slot is
 * taken: that write's temporary is then not published). The handlers above
 * unlink the temporaries of every slot. */
const char *volatile *ist_cli_temp_slot_claim(void);
void ist_cli_temp_slot_release(const char *volatile *slot);

/* ---- cancelling a run: SIGINT and SIGTERM ---------------------------------
 * ist_cli_cancel_on_signals() makes SIGINT and SIGTERM (each when at its
 * default action, as above) set a flag instead of ending the process, so
 * that a batch stops promptly and cleanly: imgstat_batch_run stops feeding
 * (imgstat_batch_config.cancel), writes in progress give up and remove
 * their temporaries (imgstat_write_options.cancel), and the command ends
 * with ist_cli_cancel_status(). A second such signal ends the process at
 * once, as ist_cli_cleanup_on_signals' handler does (temporaries of every
 * slot removed, then the signal's default action). Returns the flag. It
 * may come before or after ist_cli_cleanup_on_signals. */
const volatile sig_atomic_t *ist_cli_cancel_on_signals(void);

/* That flag, before its handlers are installed (for a run's options). */
const volatile sig_atomic_t *ist_cli_cancel_flag(void);

/* After a run: 128 + the signal that cancelled it (130 for SIGINT, 143 for
 * SIGTERM), or -1 when none did. */
int ist_cli_cancel_status(void);

/* The cost model for auto's rule: NULL (the measured one) unless the
 * environment variable IMGSTAT_AUTO is "gpu" (the GPU always repays it:
 * for tests of auto's fallbacks on the GPU machine) or "cpu" (it never
 * does). Other values are ignored. */
const imgstat_cost_model *ist_cli_cost_model(void);

#endif
