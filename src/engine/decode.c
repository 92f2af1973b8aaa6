/*
 * One input opened and decoded by a worker within the batch's budget
 * (imgstat_task_open, imgstat_task_decode, imgstat/batch.h).
 */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "io_engine.h"
#include "stats_stream.h"

#include <stdlib.h>
#include <string.h>

static int task_stop(void *task) { return imgstat_task_cancelled(task); }

imgstat_status imgstat_task_open(imgstat_task *task, const imgstat_input *in,
                                 const imgstat_load_options *load,
                                 imgstat_decoder **d, int *cancelled,
                                 imgstat_error *err) {
  *d = NULL;
  *cancelled = 0;
  if (in->kind == IMGSTAT_INPUT_ERROR) {
    imgstat_status s = imgstat_error_set(
        err, in->status, "%s", in->message ? in->message : "cannot be read");
    /* an archive's member over the limit of the bytes it is read into
     * (walk.c): the decoders' limit, whose cause the message names */
    size_t n = in->message ? strlen(in->message) : 0;
    if (s == IMGSTAT_ERR_LIMIT && n >= 12 &&
        strcmp(in->message + n - 12, "(max_memory)") == 0)
      imgstat_error_cause(err, IMGSTAT_CAUSE_MAX_MEMORY,
                          load && load->max_memory ? load->max_memory
                                                   : IMGSTAT_DEFAULT_MAX_MEMORY,
                          in->size, NULL);
    return s;
  }
  if (in->kind == IMGSTAT_INPUT_MEMBER) /* read by the iterator */
    return in->data
               ? imgstat_decoder_open_memory(in->data, in->size, load, d, err)
               : imgstat_error_set(err, IMGSTAT_ERR_IO,
                                   "the member's bytes were not read");
  const char *path = in->kind == IMGSTAT_INPUT_STDIN ? "/dev/stdin" : in->path;
  /* a FIFO with no writer, a pipe with no bytes yet: waited for until the
   * run is cancelled (a signal's handler only sets the cancel flag) */
  ist_stop stop = {task_stop, task};
  imgstat_status s = ist_decoder_open_until(path, load, &stop, d, err);
  if (s != IMGSTAT_OK && imgstat_task_cancelled(task)) {
    *cancelled = 1;
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "cancelled");
  }
  return s;
}

imgstat_status imgstat_task_decode(imgstat_task *task, const imgstat_input *in,
                                   const imgstat_load_options *load,
                                   uint32_t extra_per_sample,
                                   imgstat_image *img, uint64_t *reserved,
                                   int *cancelled, imgstat_error *err) {
  memset(img, 0, sizeof *img);
  *reserved = 0;
  imgstat_decoder *d = NULL;
  imgstat_status s = imgstat_task_open(task, in, load, &d, cancelled, err);
  if (s != IMGSTAT_OK) {
    imgstat_task_reserve(task, 0);
    return s;
  }
  return ist_task_decode_opened(task, in, d, extra_per_sample, img, reserved,
                                cancelled, err);
}

imgstat_status ist_task_decode_opened(imgstat_task *task,
                                      const imgstat_input *in,
                                      imgstat_decoder *d,
                                      uint32_t extra_per_sample,
                                      imgstat_image *img, uint64_t *reserved,
                                      int *cancelled, imgstat_error *err) {
  memset(img, 0, sizeof *img);
  *reserved = 0;
  imgstat_status s;
  const imgstat_header *h = imgstat_decoder_header(d);
  uint64_t samples = (uint64_t)h->width * h->height * (uint64_t)h->channels;
  uint64_t own = (uint64_t)(imgstat_sample_depth(h->sample) / 8);
  uint64_t extra = extra_per_sample == IMGSTAT_TASK_EXTRA_AS_INPUT
                       ? own
                       : (uint64_t)extra_per_sample;
  uint64_t bytes = samples * (own + extra);
  if (in->kind == IMGSTAT_INPUT_MEMBER) /* its bytes, held while it decodes */
    bytes += in->size;
  if (!imgstat_task_reserve(task, bytes)) {
    imgstat_decoder_close(d);
    *cancelled = 1;
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "cancelled");
  }
  *reserved = bytes;
  s = imgstat_decoder_load(d, img, err);
  if (in->kind == IMGSTAT_INPUT_MEMBER) {
    /* an archive's member: its bytes are not held until the delivery (the
     * item is the worker's until then, and nothing reads them again) */
    imgstat_input *mine = (imgstat_input *)in;
    free((void *)mine->data);
    mine->data = NULL;
  }
  return s;
}
