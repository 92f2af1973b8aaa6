/* The command-line files' shared helpers (cli_util.h). */
#include "cli_util.h"

#include "imgstat/record.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes "imgstat: " + prefix + (path escaped + ": ", when path is not
 * NULL) + the message escaped + after, to stderr in one write. prefix and
 * after are the program's own text, written as they are. */
static void message(const char *prefix, const char *path, const char *after,
                    const char *fmt, va_list ap) {
  char small[512];
  char *text = small;
  va_list copy;
  va_copy(copy, ap);
  int n = imgstat_number_vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) {
    snprintf(small, sizeof small, "(unprintable message)");
  } else if ((size_t)n >= sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) {
      imgstat_number_vsnprintf(big, (size_t)n + 1, fmt, ap);
      text = big;
    } /* else the truncated text */
  }
  char *buf = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&buf, &size);
  FILE *out = mem ? mem : stderr; /* no memory: piece by piece */
  fputs("imgstat: ", out);
  fputs(prefix, out);
  if (path) {
    imgstat_record_escape(out, path, IMGSTAT_ESCAPE_TEXT);
    fputs(": ", out);
  }
  imgstat_record_escape(out, text, IMGSTAT_ESCAPE_TEXT);
  fputs(after, out);
  if (mem) {
    if (fclose(mem) == 0)
      fwrite(buf, 1, size, stderr);
    free(buf);
  }
  if (text != small)
    free(text);
}

void ist_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message("", NULL, "\n", fmt, ap);
  va_end(ap);
}

void ist_cli_path_verror(const char *path, const char *fmt, va_list ap) {
  message("", path, "\n", fmt, ap);
}

void ist_cli_path_error(const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message("", path, "\n", fmt, ap);
  va_end(ap);
}

/* The option that sets a setting the library names in a cause. */
static const char *option_of(const char *setting) {
  static const char *const names[][2] = {
      {"max_pixels", "--max-pixels"},
      {"max_memory", "--max-memory"},
      {"verify", "--verify"},
      {"backend=gpu", "--backend gpu"},
      {"jpeg_decoder=gpu", "--jpeg-decoder gpu"},
      {"backend=cpu", "--backend cpu"},
      {"as=gray", "--as gray"},
      {"as=keep", "--as keep"},
      {"scale=native", "--scale native"},
      {"npy_layout", "--npy-layout hwc|chw"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i][0], setting) == 0)
      return names[i][1];
  return setting;
}

/* The settings' causes: the library's words at the beginning (head) or the
 * end (tail) of its message, and the program's in their place. */
typedef struct setting_words {
  imgstat_cause cause;
  const char *head, *cli_head, *tail, *cli_tail;
} setting_words;

static const setting_words settings[] = {
    {IMGSTAT_CAUSE_RANGE, "range ", "--range ", "", ""},
    {IMGSTAT_CAUSE_MEAN_STD, "zscore and given mean and std ",
     "zscore and --mean/--std ", "", ""},
    {IMGSTAT_CAUSE_MEAN_STD, "no mean and std ", "no --mean/--std ", "", ""},
    {IMGSTAT_CAUSE_MEAN_STD, "mean must be finite and std ",
     "--mean must be finite and --std ", "", ""},
    /* the count first (value) */
    {IMGSTAT_CAUSE_MEAN_STD, " mean and std values ", " --mean/--std values ",
     ", or convert it to another layout", ", or convert it with --as"},
    {IMGSTAT_CAUSE_DEPTH, "", "", ", or choose a depth of 8 or 16",
     ", or choose --depth 8|16"},
    {IMGSTAT_CAUSE_ALPHA, "", "", " or drop alpha",
     " or drop alpha (--alpha drop)"},
    {IMGSTAT_CAUSE_PAGE, "page ", "--page ", "", ""},
    {IMGSTAT_CAUSE_DATASET, "", "",
     ", and a dataset's plan reads every input twice: save it to a file first",
     ", and --dataset reads every input twice: save it to a file first"},
    /* the dataset's pooling pass, of an input it meets (no file name) */
    {IMGSTAT_CAUSE_DATASET, "", "",
     ", and a dataset's plan reads every input twice",
     ", and --dataset reads every input twice"},
    /* a framework's form the pool cannot give */
    {IMGSTAT_CAUSE_EMIT, "emit ", "--emit ", " (as=rgb)", " (--as rgb)"},
    {IMGSTAT_CAUSE_EMIT, "emit ", "--emit ", "", ""},
};

/* A setting's message in the program's words (NULL: not one of the table's
 * forms). The count of MEAN_STD's fourth form comes first. */
static const char *setting_message(const imgstat_error *err, char *out) {
  const char *msg = err->message;
  size_t len = strlen(msg);
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
    const setting_words *w = &settings[i];
    if (w->cause != err->cause)
      continue;
    char count[32] = "";
    if (w->head[0] == ' ')
      snprintf(count, sizeof count, "%" PRIu64, err->value);
    size_t c = strlen(count), h = strlen(w->head), t = strlen(w->tail);
    if (len < c + h + t || strncmp(msg, count, c) != 0 ||
        strncmp(msg + c, w->head, h) != 0 ||
        strcmp(msg + len - t, w->tail) != 0)
      continue;
    snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%s%s%.*s%s", count, w->cli_head,
             (int)(len - c - h - t), msg + c + h, w->cli_tail);
    return out;
  }
  return NULL;
}

const char *ist_cli_error_words(const imgstat_error *err, char *out) {
  const char *msg = err->message;
  size_t len = strlen(msg);
  switch (err->cause) {
  case IMGSTAT_CAUSE_MAX_PIXELS:
  case IMGSTAT_CAUSE_MAX_MEMORY: {
    /* the message ends with the setting's name and ')' */
    const char *name = imgstat_cause_name(err->cause);
    size_t n = strlen(name) + 1;
    if (len >= n && strncmp(msg + len - n, name, n - 1) == 0 &&
        msg[len - 1] == ')') {
      snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%.*s%s)", (int)(len - n), msg,
               option_of(name));
      return out;
    }
    break;
  }
  case IMGSTAT_CAUSE_GPU_UNUSABLE:
  case IMGSTAT_CAUSE_GPU_FAILED:
  case IMGSTAT_CAUSE_CONFLICT: {
    /* the message begins with the setting that needs (or used) the GPU, or
     * that conflicts; a conflict's ends with the other setting */
    size_t n = err->what ? strlen(err->what) : 0;
    if (n == 0 || strncmp(msg, err->what, n) != 0)
      break;
    const char *rest = msg + n, *last = strrchr(rest, ' ');
    if (err->cause == IMGSTAT_CAUSE_CONFLICT && last)
      snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%s%.*s%s", option_of(err->what),
               (int)(last + 1 - rest), rest, option_of(last + 1));
    else
      snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%s%s", option_of(err->what), rest);
    return out;
  }
  case IMGSTAT_CAUSE_RANGE:
  case IMGSTAT_CAUSE_MEAN_STD:
  case IMGSTAT_CAUSE_DEPTH:
  case IMGSTAT_CAUSE_ALPHA:
  case IMGSTAT_CAUSE_PAGE:
  case IMGSTAT_CAUSE_DATASET:
  case IMGSTAT_CAUSE_EMIT:
    if (setting_message(err, out))
      return out;
    break;
  case IMGSTAT_CAUSE_SETTING: {
    /* the message ends with the setting in parentheses */
    size_t n = err->what ? strlen(err->what) : 0;
    if (n == 0 || len < n + 2 || msg[len - 1] != ')' ||
        msg[len - n - 2] != '(' ||
        strncmp(msg + len - n - 1, err->what, n) != 0)
      break;
    snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%.*s%s)", (int)(len - n - 1), msg,
             option_of(err->what));
    return out;
  }
  case IMGSTAT_CAUSE_NONE:
    break;
  }
  snprintf(out, IMGSTAT_CLI_WORDS_MAX, "%s", msg);
  return out;
}

const char *ist_cli_failure_words(const imgstat_job_result *res, char *out) {
  ist_cli_error_words(&res->error, out);
  if (res->failed_stage == IMGSTAT_STAGE_LOAD &&
      res->status == IMGSTAT_ERR_LIMIT &&
      res->error.cause == IMGSTAT_CAUSE_NONE) {
    size_t len = strlen(out);
    snprintf(out + len, IMGSTAT_CLI_WORDS_MAX - len, " (see --max-pixels)");
  }
  return out;
}

void ist_cli_job_warnings(const imgstat_job_result *res, const char *path,
                          int quiet) {
  if (quiet)
    return;
  for (int k = 0; k < res->nwarnings; k++) {
    if (res->warning[k].about_input && path)
      ist_cli_path_error(path, "%s%s",
                         res->warning[k].from_decoder ? "warning: " : "",
                         res->warning[k].text);
    else
      ist_cli_error("%s", res->warning[k].text);
  }
}

void ist_cli_warning(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  message("warning: ", NULL, "\n", fmt, ap);
  va_end(ap);
}

int ist_cli_usage_verror(const char *prefix, const char *command,
                         const char *fmt, va_list ap) {
  char after[160];
  snprintf(after, sizeof after, "\nTry '%s --help' for more information.\n",
           command);
  message(prefix, NULL, after, fmt, ap);
  return IMGSTAT_EXIT_USAGE;
}

int ist_cli_usage_error(const char *prefix, const char *command,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int status = ist_cli_usage_verror(prefix, command, fmt, ap);
  va_end(ap);
  return status;
}

int ist_cli_parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (!s || s[0] < '0' || s[0] > '9')
    return 0;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return 0;
  *out = (uint64_t)v;
  return 1;
}

/* ---- sizes (--max-memory) ------------------------------------------------ */

int ist_cli_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (!s)
    return 0;
  /* The digits go through ist_cli_parse_uint; at most 20 make a
   * uint64_t. */
  char digits[24];
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9')
    n++;
  if (n == 0 || n >= sizeof digits)
    return 0;
  memcpy(digits, s, n);
  digits[n] = '\0';
  uint64_t v;
  if (!ist_cli_parse_uint(digits, 0, UINT64_MAX, &v))
    return 0;
  const char *suffix = s + n;
  unsigned shift = 0;
  if (*suffix) {
    const char *units = "KMGT";
    char c = suffix[0];
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 'a' + 'A'); /* either case */
    const char *u = c ? strchr(units, c) : NULL;
    if (!u)
      return 0;
    shift = 10u * (unsigned)(u - units + 1);
    suffix++;
    if (strcmp(suffix, "") != 0 && strcmp(suffix, "iB") != 0)
      return 0;
  }
  if (shift && v > (UINT64_MAX >> shift))
    return 0;
  v <<= shift;
  if (v < lo || v > hi)
    return 0;
  *out = v;
  return 1;
}
/* The number of len characters at s (imgstat_number_length(s) == len). */
static int parse_number(const char *s, size_t len, double lo, double hi,
                        double *out) {
  double v;
  /* an underflow is still a number (a subnormal, or 0), judged by its
   * value; on overflow the value is infinite */
  if (imgstat_number_read(s, &v) != len)
    return IMGSTAT_CLI_NUM_SYNTAX;
  if (!isfinite(v) || v < lo || v > hi)
    return IMGSTAT_CLI_NUM_RANGE;
  *out = v;
  return IMGSTAT_CLI_NUM_OK;
}

int ist_cli_parse_double(const char *s, double lo, double hi, double *out) {
  size_t len = s ? imgstat_number_length(s) : 0;
  if (len == 0 || s[len] != '\0')
    return IMGSTAT_CLI_NUM_SYNTAX;
  return parse_number(s, len, lo, hi, out);
}

int ist_cli_parse_double_list(const char *s, double lo, double hi, double *out,
                              int max) {
  int n = 0;
  if (!s)
    return IMGSTAT_CLI_NUM_SYNTAX;
  for (;;) {
    size_t len = imgstat_number_length(s);
    if (len == 0 || (s[len] != ',' && s[len] != '\0') || n == max)
      return IMGSTAT_CLI_NUM_SYNTAX;
    int r = parse_number(s, len, lo, hi, &out[n]);
    if (r != IMGSTAT_CLI_NUM_OK)
      return r;
    n++;
    if (s[len] == '\0')
      return n;
    s += len + 1;
  }
}

/* ---- temporary files and signals ------------------------------------------
 */

/* Slot 0 is ist_cli_temp_slot()'s; the others are claimed by writers on
 * workers (as many as the workers -j allows). */
#define TEMP_SLOTS 1025
static const char *volatile temp_paths[TEMP_SLOTS];
static atomic_int temp_claimed[TEMP_SLOTS];

const char *volatile *ist_cli_temp_slot(void) { return &temp_paths[0]; }

const char *volatile *ist_cli_temp_slot_claim(void) {
  for (int k = 1; k < TEMP_SLOTS; k++) {
    int free_slot = 0;
    if (atomic_compare_exchange_strong(&temp_claimed[k], &free_slot, 1))
      return &temp_paths[k];
  }
  return NULL;
}

void ist_cli_temp_slot_release(const char *volatile *slot) {
  if (slot && slot != &temp_paths[0])
    atomic_store(&temp_claimed[slot - temp_paths], 0);
}

static volatile sig_atomic_t cancel_signal;

static void on_fatal_signal(int sig) {
  for (int k = 0; k < TEMP_SLOTS; k++) {
    const char *p = temp_paths[k];
    if (p)
      unlink(p);
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  /* pending until this handler returns, then the default action */
  raise(sig);
}

/* The first SIGINT / SIGTERM asks the run to stop; a second one ends the
 * process. */
static void on_cancel_signal(int sig) {
  if (cancel_signal)
    on_fatal_signal(sig);
  else
    cancel_signal = sig;
}

/* Installs handler for the signals in sigs that are at their default
 * action (or at on_fatal_signal: the cancel handler replaces it), every one
 * of them blocked while it runs. */
static void install(const int *sigs, size_t n, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t k = 0; k < n; k++)
    sigaddset(&sa.sa_mask, sigs[k]);
  for (size_t k = 0; k < n; k++) {
    struct sigaction old;
    if (sigaction(sigs[k], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
        (old.sa_handler == SIG_DFL || old.sa_handler == on_fatal_signal))
      sigaction(sigs[k], &sa, NULL);
  }
}

const volatile sig_atomic_t *ist_cli_cancel_on_signals(void) {
  static const int sigs[] = {SIGINT, SIGTERM};
  install(sigs, 2, on_cancel_signal);
  return &cancel_signal;
}

const volatile sig_atomic_t *ist_cli_cancel_flag(void) {
  return &cancel_signal;
}

int ist_cli_cancel_status(void) {
  return cancel_signal ? 128 + cancel_signal : -1;
}

void ist_cli_cleanup_on_signals(void) {
  static const int fatal[] = {
      SIGHUP,    SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2,
#ifdef SIGXCPU
      SIGXCPU,
#endif
#ifdef SIGXFSZ
      SIGXFSZ,
#endif
#ifdef SIGVTALRM
      SIGVTALRM,
#endif
#ifdef SIGPROF
      SIGPROF,
#endif
  };
  /* one handler at a time: a second signal waits for the first to end the
   * process */
  install(fatal, sizeof fatal / sizeof *fatal, on_fatal_signal);
}

/* ---- auto's rule, overridden for tests --------------------------------------
 */

const imgstat_cost_model *ist_cli_cost_model(void) {
  /* a free GPU always repays */
  static const imgstat_cost_model always = {
      .cpu_s_per_gb = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}};
  static const imgstat_cost_model never = {.fixed_s = 1e300};
  const char *v = getenv("IMGSTAT_AUTO");
  if (!v)
    return NULL;
  if (strcmp(v, "gpu") == 0)
    return &always;
  if (strcmp(v, "cpu") == 0)
    return &never;
  return NULL;
}
