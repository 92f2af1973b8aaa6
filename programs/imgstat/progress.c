/* The progress line of a batch (progress.h). */
#include "progress.h"

#include "imgstat/imgstat.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

double ist_progress_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void ist_progress_start(ist_progress *p, int on) {
  memset(p, 0, sizeof *p);
  p->on = on;
  p->start = ist_progress_now();
}

void ist_progress_draw(ist_progress *p, uint64_t total, int known, int final) {
  if (!p->on)
    return;
  double t = ist_progress_now();
  if (!final && t - p->last_draw < 0.25)
    return;
  p->last_draw = t;
  double elapsed = t - p->start;
  double rate = elapsed > 0 ? (double)p->done / elapsed : 0;
  double mbs = elapsed > 0 ? (double)p->bytes_in / elapsed / 1e6 : 0;
  char left[32] = "?";
  if (known && rate > 0)
    imgstat_number_snprintf(left, sizeof left, "%.0fs",
                            (double)(total - p->done) / rate);
  char skipped[48] = "", workers[64] = "";
  if (p->skipped)
    snprintf(skipped, sizeof skipped, "  %" PRIu64 " skipped", p->skipped);
  if (p->workers > 0)
    snprintf(workers, sizeof workers, "  %d worker%s on %d core%s", p->workers,
             p->workers == 1 ? "" : "s", p->cores, p->cores == 1 ? "" : "s");
  imgstat_number_fprintf(
      p->to ? p->to : stderr,
      "\rimgstat: %s%" PRIu64 "/%" PRIu64 "%s  %.1f images/s  %.1f MB/s  "
      "%.0fs elapsed  %s left  %" PRIu64 " failed%s%s\033[K",
      p->label ? p->label : "", p->done, total, known ? "" : "+", rate, mbs,
      elapsed, left, p->failed, skipped, workers);
  if (final)
    fputc('\n', p->to ? p->to : stderr);
  fflush(p->to ? p->to : stderr);
  p->line_shown = 1;
}

void ist_progress_clear(ist_progress *p) {
  if (p->on && p->line_shown) {
    fputs("\r\033[K", p->to ? p->to : stderr);
    fflush(p->to ? p->to : stderr);
    p->line_shown = 0;
  }
}
