/*
 * The progress line of a batch on stderr: images done / total, images/s,
 * MB/s of input, elapsed and remaining time, failures (and skipped inputs
 * when there are any), the workers and the cores they may use, redrawn at most
 * 4 times a second over itself.
 */
#ifndef IMGSTAT_CLI_PROGRESS_H
#define IMGSTAT_CLI_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct ist_progress {
  int on;         /* drawn at all (--progress, or stderr a terminal) */
  int line_shown; /* a line is on the terminal now */
  double start;   /* seconds (ist_progress_now) */
  double last_draw;
  uint64_t done;     /* inputs delivered */
  uint64_t failed;   /* of which failed */
  uint64_t skipped;  /* of which skipped (normalize --skip-existing) */
  uint64_t bytes_in; /* input bytes of those done */
  const char *label; /* after "imgstat: " (e.g. "pass 1 of 2: "); NULL none */
  int workers;       /* the run's workers and the cores they may use, */
  int cores;         /* shown when workers > 0 */
  FILE *to;          /* where it is drawn; NULL: stderr */
} ist_progress;

/* Monotonic seconds. */
double ist_progress_now(void);

/* Zeroes p and starts its clock; on: whether to draw. */
void ist_progress_start(ist_progress *p, int on);

/* Draws the line (not more often than 4 times a second unless final; a
 * final line ends with a newline). total: the inputs known so far; known:
 * whether that is all of them. Nothing when p->on is 0. */
void ist_progress_draw(ist_progress *p, uint64_t total, int known, int final);

/* Clears the line before a message. */
void ist_progress_clear(ist_progress *p);

#endif
