/*
 * The command line's one option parser (programs/imgstat/options.c): one table
 * of every option of every subcommand -- its names, the subcommands that take
 * it, whether it takes a value, how the value is read (and the usage error
 * of a bad one), and its lines in --help -- and one loop that walks argv
 * against it. Each subcommand gives its syntax (ist_opt_syntax): how values
 * may be attached, whether it takes operands, its usage-error printer, and
 * the functions that store an option or an operand and say when an option
 * has no effect.
 */
#ifndef IMGSTAT_CLI_OPTIONS_H
#define IMGSTAT_CLI_OPTIONS_H

#include "imgstat/engine.h"
#include "imgstat/norm.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* The subcommands, as a mask for the table's "which subcommand" column. */
typedef enum ist_cmd {
  IST_CMD_STATS = 1,     /* imgstat [OPTIONS] FILE... */
  IST_CMD_NORMALIZE = 2, /* imgstat normalize */
  IST_CMD_BENCH = 4      /* imgstat bench */
} ist_cmd;

typedef enum ist_opt_id {
  IST_OPT_NONE = 0, /* a line of --help only, never matched */
  /* statistics */
  IST_OPT_JSON,
  IST_OPT_CSV,
  IST_OPT_BACKEND,
  IST_OPT_KERNEL,
  IST_OPT_VERIFY,
  IST_OPT_JOBS,
  IST_OPT_DEVICES,
  IST_OPT_MAX_PIXELS,
  IST_OPT_MAX_MEMORY,
  IST_OPT_PAGE,
  IST_OPT_NPY_LAYOUT,
  IST_OPT_DDOF,
  IST_OPT_HISTOGRAM,
  IST_OPT_PERCENTILES,
  IST_OPT_BINS,
  IST_OPT_HISTOGRAM_PNG,
  IST_OPT_HISTOGRAM_LOG,
  IST_OPT_QUIET,
  IST_OPT_HELP,
  IST_OPT_VERSION,
  IST_OPT_FILES_FROM,
  IST_OPT_NULL,
  IST_OPT_FOLLOW,
  IST_OPT_MAX_INFLIGHT,
  IST_OPT_ERRORS_AS_RECORDS,
  IST_OPT_PROGRESS,
  IST_OPT_DATASET,
  IST_OPT_DATASET_ONLY,
  IST_OPT_AS,
  IST_OPT_SCALE,
  IST_OPT_OUTLIER_Z,
  IST_OPT_EMIT,
  IST_OPT_SAMPLE,
  IST_OPT_SEED,
  IST_OPT_RANGE,
  IST_OPT_MPI,
  IST_OPT_JPEG_DECODER,
  IST_OPT_JPEG_CHECK,
  IST_OPT_BRIEF,
  /* normalize */
  IST_OPT_OUTPUT,
  IST_OPT_PER_CHANNEL,
  IST_OPT_LINKED,
  IST_OPT_DEPTH,
  IST_OPT_FORMAT,
  IST_OPT_ALPHA,
  IST_OPT_MEAN,
  IST_OPT_STD,
  IST_OPT_STATS_FROM,
  IST_OPT_FLOAT_BINS,
  IST_OPT_SKIP_EXISTING,
  IST_OPT_LAYOUT,
  IST_OPT_COMPRESSION,
  /* bench */
  IST_OPT_QUICK,
  IST_OPT_NO_NPP,
  IST_OPT_PARALLEL,
  IST_OPT_QUICK_EXIT,
  IST_OPT_RUNS,
  IST_OPT_WARMUP,
  IST_OPT_COPY_MIB,
  IST_OPT_SMALL,
  IST_OPT_LARGE,
  IST_OPT_SIZE,
  IST_OPT_BLOCK,
  IST_OPT_DEVICE,
  IST_OPT_STARTUP,
  IST_OPT_RATES,
  IST_OPT_NODATA,
  IST_OPT_MASK,
  IST_OPT_MASK_SUFFIX,
  IST_OPT_LABELS,
  IST_OPT_FILL,
  IST_OPT_REPORT,
  IST_OPT_COUNT
} ist_opt_id;

/* The longest list a value holds: one number per band (--nodata, --mean,
 * --std); --percentiles and --devices keep their own, shorter limits. */
#define IST_OPT_LIST_MAX IMGSTAT_MAX_CHANNELS

/* A value as the table's reader made it. */
typedef struct ist_opt_value {
  const char *text; /* the value as given (NULL for a flag) */
  uint64_t u;       /* numbers; a word's index in the row's list */
  int n;            /* lists: how many numbers */
  /* lists: IST_OPT_LIST_MAX numbers, the parser's (held on the heap for
   * the whole parse, valid during the row's apply only) */
  double *list;
  uint32_t width, height; /* a size W[xH] */
} ist_opt_value;

struct ist_opt_syntax;

/* One row of the table. */
typedef struct ist_opt {
  const char *name;       /* "--backend"; NULL: a line of --help only */
  const char *short_name; /* "-j", or NULL */
  unsigned commands;      /* the ist_cmd that take it */
  ist_opt_id id;
  int takes_value;
  /* Reads a value into *out: returns -1, or the exit status of the usage
   * error it printed (ist_opt_usage). NULL: the text as it is. */
  int (*read)(const struct ist_opt *row, const struct ist_opt_syntax *syn,
              const char *value, ist_opt_value *out);
  uint64_t lo, hi;   /* numbers: the range */
  const char *words; /* words: "cpu,gpu,auto" */
  const char *bad;   /* the usage error of a bad value ('%s': the value) */
  int section;       /* the --help section (the command's titles) */
  const char *help;  /* its lines in --help, or NULL */
} ist_opt;

/* What the parser remembers of the options given. */
typedef struct ist_opt_seen {
  /* Each option by its first spelling ("-j" or "--jobs"), NULL when not
   * given; order lists the ids in the order they were first given. */
  const char *spelled[IST_OPT_COUNT];
  ist_opt_id order[IST_OPT_COUNT];
  int count;
} ist_opt_seen;

/* How a subcommand's command line is written and handled. */
typedef struct ist_opt_syntax {
  ist_cmd cmd;
  /* "--name=value" and "-xVALUE" (else only "--name value") */
  int inline_values;
  /* The usage error of the unknown option (%s: the word as given), of a
   * missing value (%s: the option as given) and of a value given to a flag
   * (%.*s: the option). */
  const char *unknown_fmt;
  const char *needs_value_fmt;
  const char *no_value_fmt;
  /* Usage errors: "imgstat: PREFIX<message>" and a line pointing at
   * "COMMAND --help" (ist_cli_usage_error), unless vusage prints them its
   * own way (it returns the exit status). */
  const char *prefix;
  const char *command;
  int (*vusage)(const char *fmt, va_list ap);
  /* Stores one option: returns -1 to go on, or an exit status to stop at
   * (--help, a usage error it printed). */
  int (*apply)(void *ctx, const ist_opt *row, const ist_opt_value *value);
  /* Takes an operand (a word that is not an option, "-", or anything after
   * "--"), argv[*i]; it may take the words after it too (advancing *i).
   * Returns -1 or an exit status. NULL: the command takes none, and such
   * words (and "--") are unknown options. */
  int (*operand)(void *ctx, int argc, char **argv, int *i, int after_dashes);
  /* NULL when the option has an effect in the parsed combination, else
   * the rest of the warning "NAME has no effect REASON". */
  const char *(*no_effect)(const void *ctx, ist_opt_id id);
} ist_opt_syntax;

/* Prints a usage error of syn's command; returns its exit status. */
int ist_opt_usage(const ist_opt_syntax *syn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Stores the options of the library's engine (imgstat/engine.h) that the
 * statistics command and normalize share: --backend, --kernel, --verify,
 * -j, --max-pixels, --max-memory. Returns 1 when row was one of them. */
int ist_opt_apply_engine(imgstat_engine_options *engine, const ist_opt *row,
                         const ist_opt_value *value);

/* The suggestion rule of every usage error that says "did you mean" (an
 * unknown option's too): the nearest of the comma-separated words to
 * word[0..len), when one is a near miss (at most two edits, insertions,
 * deletions, substitutions or swaps of two neighbours, and fewer than half
 * the word's bytes); its start in words and its length in *n, or NULL. */
const char *ist_opt_nearest(const char *word, size_t len, const char *words,
                            size_t *n);

/* Walks argv[1..argc-1] against the table: options (in any order, mixed
 * with operands) go to syn->apply, operands to syn->operand; what was
 * given is recorded in *seen. Returns -1 when the command is to run, or the
 * exit status to end with (a usage error was printed, or --help ran). */
int ist_opt_parse(const ist_opt_syntax *syn, int argc, char **argv, void *ctx,
                  ist_opt_seen *seen);

/* "imgstat: warning: NAME has no effect REASON" on stderr for every option
 * given that syn->no_effect names, in the order given; nothing when quiet. */
void ist_opt_warn_no_effect(const ist_opt_syntax *syn, const void *ctx,
                            const ist_opt_seen *seen, int quiet);

/* A subcommand's --help: head, then each section (a blank line, its title,
 * its rows' lines in table order), then tail. */
typedef struct ist_opt_help {
  const char *head;
  const char *const *titles; /* section titles */
  int sections;
  const char *tail;
} ist_opt_help;

/* Writes cmd's help to out, with every IST_OPT_DOCS in its texts replaced
 * by ist_opt_docdir(). */
void ist_opt_print_help(FILE *out, ist_cmd cmd, const ist_opt_help *help);

/* Stands for the documentation folder in --help texts ("@DOCS@/dataset.md"). */
#define IST_OPT_DOCS "@DOCS@"

/* Where the user documentation is, for --help to name: the installed folder
 * found from the running program's own place (IMGSTAT_DOCDIR_FROM_BIN: the
 * docdir relative to the bindir, so that `cmake --install --prefix DIR`
 * needs no rebuild), else the source tree's docs/ (a program run from its
 * build folder), else the configured IMGSTAT_DOCDIR. Static storage. */
const char *ist_opt_docdir(void);

#ifndef IMGSTAT_DOCDIR
#define IMGSTAT_DOCDIR "docs"
#endif

/* The table itself (for the test that holds the documentation to it). */
const ist_opt *ist_opt_table(size_t *count);

#endif /* IMGSTAT_CLI_OPTIONS_H */
