/*
 * Statistics as an input is read, for the run (src/run): an item whose
 * statistics alone are wanted, of a file whose decoder can reduce its image
 * piece by piece (a TIFF page's strips or tiles, ist_decoder_streams), is
 * computed without the decoded image; every other item is decoded as
 * usual, from the decoder already open.
 */
#ifndef IMGSTAT_STATS_STREAM_H
#define IMGSTAT_STATS_STREAM_H

#include "imgstat/batch.h"
#include "imgstat/engine.h"

/* Whether the statistics item of req on the open decoder d (its header
 * read, nothing decoded) can go without the decoded image: the CPU
 * backend (or auto in a build without CUDA; not gpu or verify), no mask,
 * labels or histograms in req,
 * a decoder that reduces its image as it reads it. */
int ist_engine_streams(const imgstat_engine *e, const imgstat_decoder *d,
                       const imgstat_stats_request *req);

/* That item (ist_engine_streams true), d read by it: res is what
 * imgstat_engine_stats gives for the decoded image (the read's failure as
 * the decode's). */
imgstat_status ist_engine_stats_streamed(imgstat_engine *e, imgstat_decoder *d,
                                         const imgstat_stats_request *req,
                                         imgstat_job_result *res);

/* imgstat_task_decode of an input whose decoder d the caller opened with
 * imgstat_task_open (d is closed here, whatever happens). */
imgstat_status ist_task_decode_opened(imgstat_task *task,
                                      const imgstat_input *in,
                                      imgstat_decoder *d,
                                      uint32_t extra_per_sample,
                                      imgstat_image *img, uint64_t *reserved,
                                      int *cancelled, imgstat_error *err);

#endif
