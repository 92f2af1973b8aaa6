// What the parts of the Python module's native part (imgstat._imgstat)
// share: text and paths across the boundary, failures, the request of a
// call, kept results, array geometry, the CUDA array's context, runs. Each
// part registers its functions through its register_* (module.cpp calls
// them). The record formats (imgstat/record.h) are included by records.cpp
// only: the other parts reach records through the functions below.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

extern "C" {
#include "imgstat/cuda.h"
#include "imgstat/cuda_norm.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/report.h"
#include "imgstat/run.h"
}

namespace nb = nanobind;

namespace binding {

// ---- errors.cpp: text and paths across the boundary, failures
//
// The library's names and messages are bytes (a file's name as the system
// gave it, a message quoting a header's bytes): each reaches Python through
// py_text, decoded as os.fsdecode does (bytes that do not decode become lone
// surrogates: surrogateescape), so that os.fsencode gives back the same
// bytes. Paths from Python come through c_path, encoded as os.fsencode does.

const char *status_name(imgstat_status s);
// s[0..n) as a str (a new reference; nullptr with a Python error set).
PyObject *text_object(const char *s, size_t n);
PyObject *text_object(const char *s);
nb::object py_text(const std::string &s);

// An error whose message is the library's (any bytes), thrown with or
// without the GIL: the module's translator raises `type` with the message
// as py_text makes it.
struct TextError : std::exception {
  PyObject *type;
  std::string message;
  TextError(PyObject *t, std::string m) : type(t), message(std::move(m)) {}
  const char *what() const noexcept override { return message.c_str(); }
};

// A path from Python (str, bytes or os.PathLike) as the library takes it:
// its bytes as os.fsencode gives them. A path holding a NUL would be cut
// there (another file read): ValueError "embedded null byte", as open()
// says; TypeError for what is not a path.
std::string c_path(nb::handle path);
// c_path of each item of an iterable of paths.
std::vector<std::string> c_paths(nb::handle paths);

// A failure of an input: (path, status name, message); the Python side
// raises imgstat.ImageError from it.
struct Failure {
  std::string path, status, message;
  imgstat_cause cause = IMGSTAT_CAUSE_NONE; // with its limit and value
  uint64_t limit = 0, value = 0;
};

// A failure with err's message and cause.
Failure failure_from(const std::string &path, imgstat_status s,
                     const imgstat_error &err);
// The failure of a result (path nullptr: "").
Failure failure_of(const char *path, const imgstat_job_result *res);
// The failure as Python's (path, status, message, cause, limit, value):
// cause None or its name ("max_pixels", ...), limit and value None when
// not known.
nb::tuple failure_tuple(const Failure &f);

// ---- requests.cpp: what a call asks, the engines, one image

// What the records show of histograms: the command line's defaults (256
// display bins), percentiles as asked.
struct Request {
  int ddof = 0;
  bool histogram = false;
  std::vector<double> percentiles{1.0, 99.0};
  imgstat_backend backend = IMGSTAT_BACKEND_AUTO;
  imgstat_jpeg_decoder jpeg = IMGSTAT_JPEG_DECODER_AUTO; /* runs only */
  /* valid samples (set_valid): nodata values, none (no_file_nodata), the
   * mask's and the label image's paths ("" none) */
  std::vector<double> nodata;
  bool no_file_nodata = false;
  std::string mask, labels;
  std::string mask_suffix; /* runs: --mask-suffix ("" none) */

  // The engine's request (its paths point into this Request).
  imgstat_stats_request stats() const {
    imgstat_stats_request r;
    std::memset(&r, 0, sizeof r);
    r.histograms = histogram;
    r.npercentiles = (int)percentiles.size();
    for (size_t k = 0; k < percentiles.size(); k++)
      r.percentiles[k] = percentiles[k];
    r.nnodata = (int)nodata.size();
    r.nodata = nodata.empty() ? nullptr : nodata.data();
    r.no_file_nodata = no_file_nodata;
    r.mask_path = mask.empty() ? nullptr : mask.c_str();
    r.labels_path = labels.empty() ? nullptr : labels.c_str();
    return r;
  }
  bool valid() const {
    return !nodata.empty() || no_file_nodata || !mask.empty() ||
           !labels.empty();
  }
};

Request make_request(int ddof, bool histogram,
                     std::optional<std::vector<double>> percentiles,
                     const std::string &backend);

// The valid samples of a call (the command line's --nodata, --mask,
// --labels, and for runs --mask-suffix, the mask and labels then files or
// folders paired with the inputs): nodata values (one, or one per channel),
// none (no nodata at all, not even the file's), a mask's and a label image's
// paths (None: none; os.fsencode's encoding).
void set_valid(Request &r, std::optional<std::vector<double>> nodata,
               bool no_file_nodata, nb::handle mask, nb::handle labels,
               std::optional<std::string> mask_suffix = std::nullopt);

// The option values shared by several calls, read with the same words.
// A sample type's name ("uint8", "uint16", "float32"); false for another.
bool sample_from_name(const std::string &name, imgstat_sample *out);
// scale: true for "unit", false for "none" or "native".
bool scale_unit(const std::string &scale);
// range (low, high) with low < high.
std::pair<double, double> range_of(const std::vector<double> &range);
// as_: "keep", "gray", "rgb" or "rgba" (empty: not given, the default of
// scale_unit).
imgstat_dataset_as as_of(const std::string &as, bool scale_unit);
// The engine's options of every call: the backend, the fast kernel, the
// default limits.
void engine_defaults(imgstat_engine_options *o, imgstat_backend backend);

// One engine per backend, made at first use and kept (an engine that may
// use the GPU starts CUDA on a thread of its own: once per process).
imgstat_engine *engine_for(imgstat_backend backend);

// A result that succeeded, kept (owned) until the GIL is held again: its
// record is built then (record_dict), or later (Record).
struct Kept {
  std::string file;
  imgstat_job_result res;
  Request req;
  Kept(const char *f, imgstat_job_result *r, const Request &q)
      : file(f), res(*r), req(q) {
    std::memset(r, 0, sizeof *r); // owned here now
  }
  // an empty result, to be filled in place
  Kept(const char *f, const Request &q) : file(f), res(), req(q) {}
  Kept(const Kept &) = delete;
  Kept &operator=(const Kept &) = delete;
  ~Kept() { imgstat_job_result_free(&res); }
};

// (ok, the kept result or nullptr, the failure)
using Outcome = std::tuple<bool, std::shared_ptr<Kept>, Failure>;

// The statistics of an image already in memory (host planes or a decoded
// input), or of the file `name` when img is nullptr (read and decoded by
// the engine); the GIL is released by the caller.
Outcome stats_image(const char *name, const imgstat_image *img,
                    const Request &req);

// ---- records.cpp: records as Python objects

// The result's (ok, record) or (False, failure tuple): a Record, or the
// record's dict where it has histograms.
nb::tuple result_tuple(const Outcome &r);

// A record's items kept with no Python object (a run's thread makes them,
// the Python thread its dict).
class Emitted;
struct EmittedFree {
  void operator()(Emitted *e) const;
};
using EmittedPtr = std::unique_ptr<Emitted, EmittedFree>;
// The record of a run's result.
EmittedPtr emitted_of(const char *file, const imgstat_job_result *res,
                      const Request &req);
// Its dict, the same as stats() gives of the same result.
nb::object emitted_dict(const Emitted &e);
// The dataset record as the command line's JSON; false when it could not be
// written.
bool dataset_json(const imgstat_dataset_result *r, const Request &req,
                  std::string *out);

// ---- geometry.cpp: arrays as planes

using AnyArray = nb::ndarray<nb::ro>;

// The array's dtype as a sample type (uint8, uint16 or float32).
imgstat_sample sample_of(const AnyArray &a);
// The bytes of a sample.
inline size_t item_size(imgstat_sample s) { return (size_t)s; }
// The dtype of a sample type.
nb::dlpack::dtype dtype_of(imgstat_sample s);

// The array's geometry as planes: height, width, channels, and the element
// strides of rows, columns and channels (in elements, as DLPack gives
// them).
struct Geometry {
  uint32_t height = 0, width = 0;
  int channels = 1;
  int64_t s_row = 0, s_col = 0, s_chan = 0;
};

// The geometry of an array of nd dimensions (HW; HWC, or CHW when `chw`),
// from its shape and element strides: the one reading for every source of
// arrays (DLPack, __cuda_array_interface__, a torch tensor's own fields).
Geometry geometry_from(size_t nd, const int64_t *shape, const int64_t *strides,
                       bool chw);
bool layout_chw(const std::string &layout);
Geometry geometry_of(const AnyArray &a, const std::string &layout);
// A host array as an image: its planes borrowed when each row is contiguous
// and rows are evenly spaced (HW, CHW, any row padding), else copied into
// dense planes (HWC interleaved, negative strides, a view).
imgstat_status host_image(const AnyArray &a, const Geometry &g,
                          imgstat_sample sample, imgstat_image *img,
                          imgstat_error *err);

// Whether the array holds int16 samples, which are read as int16 images
// (imgstat.h IMGSTAT_INT16_OFFSET): sample IMGSTAT_U16, each the value
// + 32768, in planes of their own (int16_image).
bool is_int16(const AnyArray &a);
imgstat_status int16_image(const AnyArray &a, const Geometry &g,
                           imgstat_image *img, imgstat_error *err);

// ---- arrays.cpp: CUDA arrays' device context

// The refusals of a CUDA array, before any device work (the GIL held):
// a build without CUDA, backend='cpu', strides the device cannot gather.
void check_cuda_array(const Geometry &g, const Request &req, const char *fn);
// CUDA arrays are computed one at a time: under cuda_lock().
std::mutex &cuda_lock();
// The GPU context of a CUDA device (-1: the current one), made at first use
// and kept for the process; the caller holds cuda_lock().
imgstat_status gpu_for(int device, imgstat_gpu **gpu, imgstat_error *err);
// A CUDA array as a device image of gpu, its work queued on `stream`.
imgstat_status wrap_cuda(imgstat_gpu *gpu, const char *base, const Geometry &g,
                         imgstat_sample sample, uintptr_t stream,
                         imgstat_gpu_image **d, imgstat_error *err);

// ---- normalize.cpp

// The normalization arguments imgstat.normalize and normalize_files both
// take, as the caller gave them.
struct NormArgs {
  const std::string &mode;
  const std::optional<std::vector<double>> &mean, &std_, &clip, &range;
  bool linked;
  const std::string &dtype, &alpha, &scale;
};

// Their normalization options, as the command line's normalize takes them
// (channels: the array's, for the count of mean and std values; 0 when each
// input says).
imgstat_norm_options norm_options(const NormArgs &a, int channels);

// ---- runs.cpp: runs (imgstat_run.h)

struct RunArgs {
  std::vector<std::string> paths;
  std::vector<int> is_list;
  int jobs = 0;
  Request req;
  bool dataset = false;
  imgstat_dataset_options ds{};
  bool follow = false;
  uint64_t sample = 0, seed = 0; // the dataset's sample (0: every input)
  // A dataset run's report page (imgstat/report.h, the command line's
  // --report): written there at the end ("" none), report_command shown as
  // the run's command line ("" none).
  std::string report_path, report_command;
};

RunArgs make_run_args(const std::vector<std::string> &inputs,
                      const std::vector<std::string> &lists, int jobs,
                      bool follow, Request req,
                      const std::string &jpeg_decoder);
// The run's sources, pointing into a's paths.
std::vector<imgstat_run_source> run_sources(const RunArgs &a);

// One input's outcome, queued for the Python thread.
struct Item {
  bool ok;
  EmittedPtr record; // ok: the record
  Failure f;         // else
};

// A run on a thread of its own: its items wait in a bounded queue for the
// Python iterator; closing it cancels the run and waits for the thread.
class Scan {
public:
  explicit Scan(RunArgs args);
  ~Scan();

  // The next item (ok, the record's dict or the failure tuple), or None at
  // the end. The GIL is released while waiting; Ctrl-C (a pending signal)
  // cancels.
  nb::object next();
  void close();
  // The dataset record ({"dataset": {...}}, the command line's JSON) as a
  // dict, after the end (dataset.cpp).
  nb::object dataset_record();
  // The run's progress figures so far: (done, failed, total, total_known).
  nb::tuple progress();
  // Why the report page was not written ("" when it was, or none was
  // asked for) and the Python exception that says so; after the end.
  const std::string &report_error() const { return report_error_; }
  PyObject *report_exception() const { return report_exc_; }

private:
  void join();
  static int on_item(void *ctx, const imgstat_run_item *it,
                     const imgstat_run_progress *p);
  void run();
  void finish_dataset(imgstat_run *run); // dataset.cpp
  // The report page: made before the run (false: report_error_ says why),
  // written at its end (dataset.cpp).
  bool start_report(imgstat_run *run, const imgstat_run_options &o);
  void write_report(const imgstat_dataset_result *r);

  RunArgs args_;
  std::thread thread_;
  std::mutex m_, join_m_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool done_ = false;
  std::string error_;
  volatile sig_atomic_t cancel_ = 0;
  bool dataset_ok_ = false;
  std::string dataset_json_;
  // the dataset record's names, as the result has them: per channel (min's
  // file, max's file; both empty: no values), (file, reason) per image left
  // out and per outlier
  struct {
    std::vector<std::pair<std::string, std::string>> extrema, excluded,
        outliers;
  } ds_texts_;
  imgstat_run_progress progress_{};
  imgstat_report *report_ = nullptr; // a report page's figures, or none
  std::string report_error_;
  PyObject *report_exc_ = nullptr;
  double started_ = 0; // the run's start, seconds since the epoch
};

// ---- each part's functions and classes in the module (module.cpp)
void register_errors(nb::module_ &m);
void register_requests(nb::module_ &m);
void register_records(nb::module_ &m);
void register_arrays(nb::module_ &m);
void register_normalize(nb::module_ &m);
void register_runs(nb::module_ &m);
void register_dataset(nb::module_ &m);
void register_normalize_files(nb::module_ &m);

} // namespace binding
