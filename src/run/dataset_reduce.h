/*
 * The run's MPI codec (src/run/dataset_reduce.c), internal: the dataset
 * accumulators of every rank merged on rank 0.
 */
#ifndef IMGSTAT_RUN_DATASET_REDUCE_H
#define IMGSTAT_RUN_DATASET_REDUCE_H

#include "imgstat/dataset.h"
#include "imgstat/mpi.h"

/* Every rank's accumulator (*ds) merged on rank 0 in rank order (there *ds
 * becomes the merged one); a rank whose accumulator could not be made
 * (*ds NULL) takes part with an empty one made from opts (else the others
 * would wait for it). Collective. */
imgstat_status ist_run_reduce_dataset(imgstat_mpi *mpi,
                                      const imgstat_dataset_options *opts,
                                      imgstat_dataset **ds, imgstat_error *err);

#endif
