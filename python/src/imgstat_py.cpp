// The Python module's native part (imgstat._imgstat): the library's engine
// on one image (a path, bytes, a host array, a CUDA array) and its run API
// (imgstat_run.h) over files and folders. Records are the library's JSON
// (src/pipeline/record.h, the command line's format); the Python side
// (imgstat/__init__.py) parses them and raises its exceptions. Nothing here
// prints or exits; the pixels' work runs with the GIL released.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

extern "C" {
#include "imgstat/cuda.h"
#include "imgstat/cuda_norm.h"
#include "imgstat/dataset.h"
#include "imgstat/imgstat.h"
#include "imgstat/job.h"
#include "imgstat/run.h"
#include "record.h"
}

namespace nb = nanobind;

namespace {

const char *status_name(imgstat_status s) {
  switch (s) {
  case IMGSTAT_OK:
    return "ok";
  case IMGSTAT_ERR_IO:
    return "io";
  case IMGSTAT_ERR_FORMAT:
    return "format";
  case IMGSTAT_ERR_UNSUPPORTED:
    return "unsupported";
  case IMGSTAT_ERR_LIMIT:
    return "limit";
  case IMGSTAT_ERR_NOMEM:
    return "nomem";
  case IMGSTAT_ERR_ARG:
    return "arg";
  case IMGSTAT_ERR_NODEVICE:
    return "nodevice";
  case IMGSTAT_ERR_DEVICE:
    return "device";
  }
  return "unknown";
}

// ---- text and paths across the boundary
//
// The library's names and messages are bytes (a file's name as the system
// gave it, a message quoting a header's bytes): each reaches Python through
// py_text, decoded as os.fsdecode does (bytes that do not decode become lone
// surrogates: surrogateescape), so that os.fsencode gives back the same
// bytes. Paths from Python come through c_path, encoded as os.fsencode does.

// s[0..n) as a str (a new reference; nullptr with a Python error set).
PyObject *text_object(const char *s, size_t n) {
  return PyUnicode_DecodeFSDefaultAndSize(s, (Py_ssize_t)n);
}

PyObject *text_object(const char *s) { return text_object(s, std::strlen(s)); }

nb::object py_text(const std::string &s) {
  PyObject *o = text_object(s.data(), s.size());
  if (!o)
    throw nb::python_error();
  return nb::steal(o);
}

// An error whose message is the library's (any bytes), thrown with or
// without the GIL: the module's translator raises `type` with the message
// as py_text makes it.
struct TextError : std::exception {
  PyObject *type;
  std::string message;
  TextError(PyObject *t, std::string m) : type(t), message(std::move(m)) {}
  const char *what() const noexcept override { return message.c_str(); }
};

void translate_text_error(const std::exception_ptr &p, void *) {
  try {
    std::rethrow_exception(p);
  } catch (const TextError &e) {
    PyObject *m = text_object(e.message.data(), e.message.size());
    if (m) {
      PyErr_SetObject(e.type, m);
      Py_DECREF(m);
    }
  }
}

// A path from Python (str, bytes or os.PathLike) as the library takes it:
// its bytes as os.fsencode gives them. A path holding a NUL would be cut
// there (another file read): ValueError "embedded null byte", as open()
// says; TypeError for what is not a path.
std::string c_path(nb::handle path) {
  PyObject *b = nullptr;
  if (!PyUnicode_FSConverter(path.ptr(), &b))
    throw nb::python_error();
  nb::bytes bytes = nb::steal<nb::bytes>(b);
  return std::string(bytes.c_str(), bytes.size());
}

// c_path of each item of an iterable of paths.
std::vector<std::string> c_paths(nb::handle paths) {
  std::vector<std::string> out;
  for (nb::handle p : paths)
    out.push_back(c_path(p));
  return out;
}

// A failure of an input: (path, status name, message); the Python side
// raises imgstat.ImageError from it.
struct Failure {
  std::string path, status, message;
  imgstat_cause cause = IMGSTAT_CAUSE_NONE; // with its limit and value
  uint64_t limit = 0, value = 0;
};

// A failure with err's message and cause.
Failure failure_from(const std::string &path, imgstat_status s,
                     const imgstat_error &err) {
  Failure f{path, status_name(s), err.message};
  f.cause = err.cause;
  f.limit = err.limit;
  f.value = err.value;
  return f;
}

// The failure as Python's (path, status, message, cause, limit, value):
// cause None or its name ("max_pixels", ...), limit and value None when
// not known.
nb::tuple failure_tuple(const Failure &f) {
  nb::object none = nb::none();
  if (f.cause == IMGSTAT_CAUSE_NONE)
    return nb::make_tuple(py_text(f.path), f.status, py_text(f.message), none,
                          none, none);
  return nb::make_tuple(py_text(f.path), f.status, py_text(f.message),
                        imgstat_cause_name(f.cause),
                        f.limit ? nb::cast(f.limit) : none,
                        f.value ? nb::cast(f.value) : none);
}

struct ImageFailed {
  Failure f;
};

// What the records show of histograms: the command line's defaults (256
// display bins), percentiles as asked.
struct Request {
  int ddof = 0;
  bool histogram = false;
  std::vector<double> percentiles{1.0, 99.0};
  imgstat_backend backend = IMGSTAT_BACKEND_AUTO;
  imgstat_jpeg_decoder jpeg = IMGSTAT_JPEG_DECODER_AUTO; /* runs only */

  imgstat_stats_request stats() const {
    imgstat_stats_request r;
    std::memset(&r, 0, sizeof r);
    r.histograms = histogram;
    r.npercentiles = (int)percentiles.size();
    for (size_t k = 0; k < percentiles.size(); k++)
      r.percentiles[k] = percentiles[k];
    return r;
  }
  ist_hist_cli hist() const {
    ist_hist_cli h;
    std::memset(&h, 0, sizeof h);
    h.fields = histogram;
    h.npercentiles = (int)percentiles.size();
    for (size_t k = 0; k < percentiles.size(); k++)
      h.percentiles[k] = percentiles[k];
    h.bins = 256;
    return h;
  }
};

Request make_request(int ddof, bool histogram,
                     std::optional<std::vector<double>> percentiles,
                     const std::string &backend) {
  Request r;
  if (ddof != 0 && ddof != 1)
    throw nb::value_error("ddof must be 0 or 1");
  r.ddof = ddof;
  r.histogram = histogram;
  if (percentiles) {
    if (percentiles->size() > IMGSTAT_MAX_PERCENTILES)
      throw nb::value_error("too many percentiles");
    for (double p : *percentiles)
      if (!(p >= 0 && p <= 100))
        throw nb::value_error("percentiles must be in [0, 100]");
    r.percentiles = *percentiles;
    r.histogram = true; // as --percentiles does
  }
  if (!imgstat_backend_from_name(backend.c_str(), &r.backend))
    throw nb::value_error("backend must be 'auto', 'cpu' or 'gpu'");
  return r;
}

// One engine per backend, made at first use and kept (an engine that may
// use the GPU starts CUDA on a thread of its own: once per process).
imgstat_engine *engine_for(imgstat_backend backend) {
  static std::mutex m;
  static std::map<int, imgstat_engine *> engines;
  std::lock_guard<std::mutex> lock(m);
  auto it = engines.find((int)backend);
  if (it != engines.end())
    return it->second;
  imgstat_engine_options o;
  std::memset(&o, 0, sizeof o);
  o.backend = backend;
  o.kernel = IMGSTAT_KERNEL_FAST;
  o.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  o.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  imgstat_engine *e = nullptr;
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  if (imgstat_engine_create(&o, &e, &err) != IMGSTAT_OK)
    throw TextError(PyExc_RuntimeError, err.message);
  engines[(int)backend] = e;
  return e;
}

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

Outcome kept(const char *file, imgstat_job_result *res, const Request &req) {
  return {true, std::make_shared<Kept>(file, res, req), Failure()};
}

// The values of a record's JSON shape (ist_record_emit) as Python objects:
// the values and types json.loads gives of the command line's --json line,
// without the text. A double whose round-trip text has no fraction or
// exponent is an int there, so it is one here. Texts (the file's name, the
// decoder's warnings) are text_object's: the same str as json.loads gives
// where they are UTF-8, and their own bytes back from os.fsencode where they
// are not (the text has U+FFFD there). New references (nullptr with a
// Python error set on failure).
PyObject *uint_object(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }

PyObject *real_object(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return PyLong_FromLongLong((long long)v);
  if (std::isfinite(v) && std::fabs(v) >= 1e15) {
    char buf[40]; // the text decides, as for json.loads
    ist_output_format_double(buf, sizeof buf, v);
    return std::strpbrk(buf, ".eE") ? PyFloat_FromDouble(v)
                                    : PyLong_FromString(buf, nullptr, 10);
  }
  return PyFloat_FromDouble(v);
}

// The record as a Python dict, straight from its JSON shape. Errors of the
// Python API are noted, not thrown (C frames in between).
class DictSink {
public:
  static nb::object build(const ist_record *rec) {
    return build_from(
        [rec](const ist_record_sink *k) { ist_record_emit(rec, k); });
  }
  // The dict of what emit(sink) gives the sink.
  template <class Emit> static nb::object build_from(Emit emit) {
    DictSink d;
    const ist_record_sink k = {&d, open, close, uint, real, text, null};
    emit(&k);
    if (d.failed_ || !d.root_)
      throw nb::python_error();
    PyObject *root = d.root_;
    d.root_ = nullptr; // the caller's now
    return nb::steal(root);
  }
  ~DictSink() { Py_XDECREF(root_); }

private:
  PyObject *root_ = nullptr;
  std::vector<PyObject *> stack_; // borrowed: each is held by its parent
  bool failed_ = false;

  void put(const char *key, PyObject *v) { // steals v
    if (!v) {
      failed_ = true;
      return;
    }
    if (stack_.empty()) {
      Py_XDECREF(root_);
      root_ = v;
      return;
    }
    PyObject *top = stack_.back();
    if (!top) {
      Py_DECREF(v);
      return;
    }
    int rc;
    if (PyList_Check(top)) {
      rc = PyList_Append(top, v);
    } else {
      PyObject *k = key_object(key);
      rc = k ? PyDict_SetItem(top, k, v) : -1;
      Py_XDECREF(k);
    }
    failed_ |= rc != 0;
    Py_DECREF(v);
  }
  static DictSink *of(void *c) { return static_cast<DictSink *>(c); }
  // The key's str, from a cache of the last ones by address and text
  // (the keys are mostly the writer's literals); a new reference.
  static PyObject *key_object(const char *key) {
    struct Entry {
      const char *at = nullptr;
      std::string text;
      PyObject *str = nullptr;
    };
    static Entry cache[64]; // the GIL held
    Entry &e = cache[((uintptr_t)key >> 3) % 64];
    if (e.at != key || e.text != key) {
      PyObject *str = PyUnicode_InternFromString(key);
      if (!str)
        return nullptr;
      Py_XDECREF(e.str);
      e.at = key;
      e.text = key;
      e.str = str;
    }
    Py_INCREF(e.str);
    return e.str;
  }
  static void open(void *c, const char *key, int array) {
    DictSink *d = of(c);
    PyObject *o = array ? PyList_New(0) : PyDict_New();
    if (o) {
      Py_INCREF(o);   // the reference put() takes
      d->put(key, o); // now held by its parent (or root_)
      Py_DECREF(o);
    } else {
      d->failed_ = true;
    }
    d->stack_.push_back(o); // nullptr after a failure: its items are dropped
  }
  static void close(void *c, int) {
    if (!of(c)->stack_.empty())
      of(c)->stack_.pop_back();
  }
  static void uint(void *c, const char *key, uint64_t v) {
    of(c)->put(key, uint_object(v));
  }
  static void real(void *c, const char *key, double v) {
    of(c)->put(key, real_object(v));
  }
  static void text(void *c, const char *key, const char *s) {
    of(c)->put(key, text_object(s));
  }
  static void null(void *c, const char *key) {
    Py_INCREF(Py_None);
    of(c)->put(key, Py_None);
  }
};

// One per-channel field of the record ("mean", "min", ...) as a tuple, one
// item per object of its "stats" array (None where the object lacks the
// key), the same values DictSink puts there: Stats.mean and friends without
// building the whole dict (a column costs its own objects only).
class ColumnSink {
public:
  static nb::object build(const ist_record *rec, const char *key) {
    ColumnSink d;
    d.want_ = key;
    const ist_record_sink k = {&d, open, close, uint, real, text, null};
    ist_record_emit(rec, &k);
    if (d.failed_)
      throw nb::python_error();
    nb::tuple out = nb::steal<nb::tuple>(PyTuple_New((Py_ssize_t)d.n_));
    for (int c = 0; c < d.n_; c++) {
      PyObject *v = d.v_[c] ? d.v_[c] : Py_None;
      Py_INCREF(v);
      PyTuple_SET_ITEM(out.ptr(), c, v);
    }
    return out;
  }
  ~ColumnSink() {
    for (PyObject *v : v_)
      Py_XDECREF(v);
  }

private:
  const char *want_ = nullptr;
  int depth_ = 0;         // containers open (the root is 1)
  bool in_stats_ = false; // the root's "stats" array is open
  PyObject *v_[IMGSTAT_MAX_CHANNELS] = {};
  int n_ = 0; // the "stats" array's objects so far
  bool failed_ = false;

  static ColumnSink *of(void *c) { return static_cast<ColumnSink *>(c); }
  // A value of one of the "stats" array's objects, named `want_`.
  bool wanted(const char *key) const {
    return in_stats_ && depth_ == 3 && n_ > 0 && key &&
           std::strcmp(key, want_) == 0;
  }
  void put(PyObject *o) { // steals o
    failed_ |= !o;
    Py_XDECREF(v_[n_ - 1]);
    v_[n_ - 1] = o;
  }
  static void open(void *c, const char *key, int) {
    ColumnSink *d = of(c);
    d->depth_++;
    if (d->depth_ == 2)
      d->in_stats_ = key && std::strcmp(key, "stats") == 0;
    else if (d->depth_ == 3 && d->in_stats_ && d->n_ < IMGSTAT_MAX_CHANNELS)
      d->n_++;
  }
  static void close(void *c, int) {
    ColumnSink *d = of(c);
    if (d->depth_-- == 2)
      d->in_stats_ = false;
  }
  static void uint(void *c, const char *key, uint64_t v) {
    if (of(c)->wanted(key))
      of(c)->put(uint_object(v));
  }
  static void real(void *c, const char *key, double v) {
    if (of(c)->wanted(key))
      of(c)->put(real_object(v));
  }
  static void text(void *c, const char *key, const char *s) {
    if (of(c)->wanted(key))
      of(c)->put(text_object(s));
  }
  static void null(void *, const char *) {} // None already
};

// A record's items (ist_record_emit's calls of its sink) kept as they came,
// with no Python object: a run's thread records a result's record (the
// result is the run's), the Python thread then makes its dict of them
// (DictSink), the same dict as stats() gives of the same result.
class Emitted {
public:
  static Emitted of(const ist_record *rec) {
    Emitted e;
    const ist_record_sink k = {&e, open, close, uint, real, text, null};
    ist_record_emit(rec, &k);
    return e;
  }
  // Calls the sink as ist_record_emit did.
  void replay(const ist_record_sink *k) const {
    for (const Item &i : items_) {
      const char *key = at(i.key);
      switch (i.kind) {
      case OPEN:
        k->open(k->ctx, key, i.array);
        break;
      case CLOSE:
        k->close(k->ctx, i.array);
        break;
      case UINT:
        k->uint(k->ctx, key, i.u);
        break;
      case REAL:
        k->real(k->ctx, key, i.d);
        break;
      case TEXT:
        k->text(k->ctx, key, at(i.text));
        break;
      case NONE:
        k->null(k->ctx, key);
        break;
      }
    }
  }

private:
  enum Kind : uint8_t { OPEN, CLOSE, UINT, REAL, TEXT, NONE };
  static constexpr uint32_t kNoKey = UINT32_MAX;
  struct Item {
    Kind kind;
    uint8_t array;
    uint32_t key; // an offset in texts_, or kNoKey
    union {
      uint64_t u;
      double d;
      uint32_t text; // an offset in texts_
    };
  };
  std::vector<Item> items_;
  std::string texts_; // the keys and texts, each ending with its NUL

  uint32_t keep(const char *s) {
    if (!s)
      return kNoKey;
    uint32_t offset = (uint32_t)texts_.size();
    texts_.append(s, std::strlen(s) + 1);
    return offset;
  }
  const char *at(uint32_t offset) const {
    return offset == kNoKey ? nullptr : texts_.data() + offset;
  }
  Item &add(Kind kind, const char *key) {
    items_.push_back(Item());
    Item &i = items_.back();
    i.kind = kind;
    i.array = 0;
    i.key = keep(key);
    i.u = 0;
    return i;
  }
  static Emitted *of(void *c) { return static_cast<Emitted *>(c); }
  static void open(void *c, const char *key, int array) {
    of(c)->add(OPEN, key).array = (uint8_t)array;
  }
  static void close(void *c, int array) {
    of(c)->add(CLOSE, nullptr).array = (uint8_t)array;
  }
  static void uint(void *c, const char *key, uint64_t v) {
    of(c)->add(UINT, key).u = v;
  }
  static void real(void *c, const char *key, double v) {
    of(c)->add(REAL, key).d = v;
  }
  static void text(void *c, const char *key, const char *s) {
    uint32_t t = of(c)->keep(s);
    of(c)->add(TEXT, key).text = t;
  }
  static void null(void *c, const char *key) { of(c)->add(NONE, key); }
};

ist_record record_of(const Kept &k, ist_hist_cli *hist) {
  *hist = k.req.hist();
  ist_record rec;
  ist_record_from_job(&rec, k.file.c_str(), &k.res, k.req.ddof, hist,
                      k.req.jpeg == IMGSTAT_JPEG_DECODER_GPU);
  return rec;
}

nb::object record_dict(const Kept &k) {
  ist_hist_cli hist;
  ist_record rec = record_of(k, &hist);
  return DictSink::build(&rec);
}

// One image's record, kept as the library's result until Python reads it:
// its dict is built when asked for (Stats.to_dict), a per-channel column
// straight from the result (Stats.mean, ...). A call that returns one
// image's figures pays for the objects it hands out, not the whole record.
struct Record {
  std::shared_ptr<Kept> kept;
  nb::object dict() const { return record_dict(*kept); }
  nb::object column(const char *key) const {
    ist_hist_cli hist;
    ist_record rec = record_of(*kept, &hist);
    return ColumnSink::build(&rec, key);
  }
};

Failure failure_of(const char *path, const imgstat_job_result *res) {
  return failure_from(path ? path : "", res->status, res->error);
}

// The statistics of an image already in memory (host planes or a decoded
// input), or of the file `name` when img is nullptr (read and decoded by
// the engine); the GIL is released by the caller.
Outcome stats_image(const char *name, const imgstat_image *img,
                    const Request &req) {
  imgstat_engine *e = engine_for(req.backend);
  imgstat_stats_request sr = req.stats();
  imgstat_job_result res;
  std::memset(&res, 0, sizeof res);
  imgstat_engine_stats(e, name, img, &sr, &res);
  Outcome out;
  if (res.status == IMGSTAT_OK)
    out = kept(name, &res, req);
  else
    out = {false, nullptr, failure_of(name, &res)};
  imgstat_job_result_free(&res);
  return out;
}

nb::tuple result_tuple(const Outcome &r) {
  if (std::get<0>(r)) {
    // histograms (up to 4 x 64 Ki counts) are not kept past the call
    const std::shared_ptr<Kept> &k = std::get<1>(r);
    if (k->res.has_histograms)
      return nb::make_tuple(true, record_dict(*k));
    return nb::make_tuple(true, Record{k});
  }
  return nb::make_tuple(false, failure_tuple(std::get<2>(r)));
}

nb::tuple stats_path(nb::handle path, int ddof, bool histogram,
                     std::optional<std::vector<double>> percentiles,
                     const std::string &backend) {
  std::string file = c_path(path);
  Request req = make_request(ddof, histogram, percentiles, backend);
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_image(file.c_str(), nullptr, req);
  }
  return result_tuple(r);
}

nb::tuple stats_bytes(nb::bytes data, int ddof, bool histogram,
                      std::optional<std::vector<double>> percentiles,
                      const std::string &backend) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  Outcome r;
  const void *p = data.c_str();
  size_t n = data.size();
  {
    nb::gil_scoped_release nogil;
    imgstat_load_options lo;
    std::memset(&lo, 0, sizeof lo);
    lo.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
    lo.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
    imgstat_image img;
    std::memset(&img, 0, sizeof img);
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    imgstat_status s = imgstat_image_load_memory(p, n, &lo, &img, &err);
    if (s != IMGSTAT_OK)
      r = {false, nullptr, failure_from("<bytes>", s, err)};
    else
      r = stats_image("<bytes>", &img, req);
    imgstat_image_free(&img);
  }
  return result_tuple(r);
}

// ---- arrays
// ------------------------------------------------------------------

using AnyArray = nb::ndarray<nb::ro>;

imgstat_sample sample_of(const AnyArray &a) {
  nb::dlpack::dtype t = a.dtype();
  if (t == nb::dtype<uint8_t>())
    return IMGSTAT_U8;
  if (t == nb::dtype<uint16_t>())
    return IMGSTAT_U16;
  if (t == nb::dtype<float>())
    return IMGSTAT_F32;
  throw nb::type_error("imgstat.stats: the array's dtype must be uint8, "
                       "uint16 or float32");
}

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
                       bool chw) {
  if (nd != 2 && nd != 3)
    throw nb::value_error("imgstat.stats: an image array is HW, HWC or CHW");
  for (size_t k = 0; k < nd; k++) {
    if (shape[k] < 0)
      throw nb::value_error("imgstat.stats: bad array shape");
    if (shape[k] > (int64_t)UINT32_MAX)
      throw nb::value_error("imgstat.stats: the array is too large");
  }
  Geometry g;
  const size_t row = nd == 3 && chw ? 1 : 0; // then the column
  g.height = (uint32_t)shape[row];
  g.width = (uint32_t)shape[row + 1];
  g.s_row = strides[row];
  g.s_col = strides[row + 1];
  if (nd == 3) {
    const size_t chan = chw ? 0 : 2;
    g.channels = (int)shape[chan];
    g.s_chan = strides[chan];
  }
  if (g.channels < 1 || g.channels > IMGSTAT_MAX_CHANNELS)
    throw nb::value_error("imgstat.stats: an image has 1 to 4 channels (is "
                          "the layout right? layout='hwc' or 'chw')");
  if (g.height == 0 || g.width == 0)
    throw nb::value_error("imgstat.stats: the array is empty");
  return g;
}

bool layout_chw(const std::string &layout) {
  if (layout != "hwc" && layout != "chw")
    throw nb::value_error("imgstat.stats: layout must be 'hwc' or 'chw'");
  return layout == "chw";
}

Geometry geometry_of(const AnyArray &a, const std::string &layout) {
  size_t nd = a.ndim();
  int64_t shape[3] = {0, 0, 0}, strides[3] = {0, 0, 0};
  for (size_t k = 0; k < nd && k < 3; k++) {
    shape[k] = a.shape(k) > (size_t)INT64_MAX ? -1 : (int64_t)a.shape(k);
    strides[k] = a.stride(k);
  }
  return geometry_from(nd, shape, strides, nd == 3 && layout_chw(layout));
}

// Planes borrowed from the array when each row is contiguous and rows are
// evenly spaced (HW, CHW, any row padding); else NULL.
bool borrow_planes(const char *base, const Geometry &g, size_t item,
                   void *planes[IMGSTAT_MAX_CHANNELS], size_t *stride) {
  if (g.s_col != 1 || g.s_row < (int64_t)g.width ||
      (g.channels > 1 && g.s_chan <= 0))
    return false;
  for (int c = 0; c < g.channels; c++)
    planes[c] = (void *)(base + (size_t)g.s_chan * (size_t)c * item);
  *stride = (size_t)g.s_row * item;
  return true;
}

// Copies any strided host array (HWC interleaved, negative strides, a
// view) into the image's dense planes.
void copy_planes(const AnyArray &a, const Geometry &g, size_t item,
                 imgstat_image *img) {
  const char *base = (const char *)a.data();
  for (int c = 0; c < g.channels; c++) {
    char *dst = (char *)img->planes[c];
    for (uint32_t y = 0; y < g.height; y++) {
      const char *row =
          base + (g.s_row * (int64_t)y + g.s_chan * c) * (int64_t)item;
      char *out = dst + (size_t)y * g.width * item;
      if (g.s_col == 1) {
        std::memcpy(out, row, (size_t)g.width * item);
        continue;
      }
      int64_t step = g.s_col * (int64_t)item;
      switch (item) {
      case 1:
        for (uint32_t x = 0; x < g.width; x++)
          out[x] = row[step * x];
        break;
      case 2:
        for (uint32_t x = 0; x < g.width; x++)
          std::memcpy(out + 2 * x, row + step * x, 2);
        break;
      default:
        for (uint32_t x = 0; x < g.width; x++)
          std::memcpy(out + 4 * (size_t)x, row + step * x, 4);
        break;
      }
    }
  }
}

Outcome stats_host_array(const AnyArray &a, const Geometry &g,
                         imgstat_sample sample, const Request &req) {
  size_t item = sample == IMGSTAT_U8 ? 1 : sample == IMGSTAT_U16 ? 2 : 4;
  imgstat_image img;
  std::memset(&img, 0, sizeof img);
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  void *planes[IMGSTAT_MAX_CHANNELS] = {nullptr};
  size_t stride = 0;
  imgstat_status s;
  if (borrow_planes((const char *)a.data(), g, item, planes, &stride)) {
    s = imgstat_image_wrap(&img, g.width, g.height, g.channels, sample, planes,
                           stride, &err);
  } else {
    s = imgstat_image_alloc(&img, g.width, g.height, g.channels, sample, 0,
                            &err);
    if (s == IMGSTAT_OK)
      copy_planes(a, g, item, &img);
  }
  Outcome r;
  if (s != IMGSTAT_OK)
    r = {false, nullptr, failure_from("<array>", s, err)};
  else
    r = stats_image("<array>", &img, req);
  imgstat_image_free(&img);
  return r;
}

// ---- CUDA arrays -------------------------------------------------------

// The refusals of a CUDA array, before any device work (the GIL held):
// a build without CUDA, backend='cpu', strides the device cannot gather.
void check_cuda_array(const Geometry &g, const Request &req, const char *fn) {
  if (!imgstat_gpu_compiled())
    throw nb::value_error((std::string(fn) +
                           ": a CUDA array needs an imgstat built with CUDA "
                           "(this one is not)")
                              .c_str());
  if (req.backend == IMGSTAT_BACKEND_CPU)
    throw nb::value_error(
        (std::string(fn) + ": backend='cpu' with a CUDA array").c_str());
  // strides of dimensions of one element are never used
  bool negative = (g.height > 1 && g.s_row < 0) ||
                  (g.width > 1 && g.s_col < 0) ||
                  (g.channels > 1 && g.s_chan < 0);
  if (negative)
    throw nb::value_error((std::string(fn) +
                           ": a CUDA array with negative strides (a reversed "
                           "view) is not supported; pass a contiguous copy")
                              .c_str());
}

// The GPU context of a CUDA device (-1: the current one), made at first use
// and kept for the process. CUDA arrays are computed one at a time: the
// caller holds cuda_lock().
std::mutex &cuda_lock() {
  static std::mutex m;
  return m;
}

imgstat_status gpu_for(int device, imgstat_gpu **gpu, imgstat_error *err) {
  static std::map<int, imgstat_gpu *> gpus;
  auto it = gpus.find(device);
  if (it != gpus.end()) {
    *gpu = it->second;
    return IMGSTAT_OK;
  }
  imgstat_status s = imgstat_gpu_create(device, gpu, err);
  if (s != IMGSTAT_OK)
    return s;
  // -1 (the current device) and its ordinal share one context
  int ordinal = imgstat_gpu_device(*gpu);
  auto known = gpus.find(ordinal);
  if (known != gpus.end()) {
    imgstat_gpu_destroy(*gpu);
    *gpu = known->second;
  }
  gpus[device] = *gpu;
  gpus[ordinal] = *gpu;
  return IMGSTAT_OK;
}

// A CUDA array as a device image of gpu (imgstat_gpu_image_wrap_on):
// dense planes (HW, CHW) read where they are, dense HWC read as it is by
// the interleaved kernel, other views gathered into dense planes by the
// device. Either way no pixel goes to the host, and the figures are the
// same. The image's work is queued on `stream`, the one the producer's
// work is queued on (imgstat_gpu_wait_stream's values: 1 the legacy
// default stream; 0: none to follow, the slot's own), so it follows that
// work on the device with no wait here.
imgstat_status wrap_cuda(imgstat_gpu *gpu, const char *base, const Geometry &g,
                         imgstat_sample sample, uintptr_t stream,
                         imgstat_gpu_image **d, imgstat_error *err) {
  size_t item = (size_t)sample;
  return imgstat_gpu_image_wrap_on(
      gpu, g.width, g.height, g.channels, sample, base,
      (size_t)(g.height > 1 ? g.s_row : 0) * item,
      (size_t)(g.width > 1 ? g.s_col : 0) * item,
      (size_t)(g.channels > 1 ? g.s_chan : 0) * item, stream, d, err);
}

// The histograms of every channel of a device image and their figures,
// as the job layer computes them on the GPU (src/job/job.c, histograms_on):
// the device's counts and percentiles; skewness and kurtosis from the
// moments, which for u8/u16 come from the histogram and for f32 from the
// samples in raster order on the host (the CPU's sums, bit for bit: this
// one plane at a time is copied to the host).
imgstat_status cuda_histograms(imgstat_gpu *gpu, imgstat_gpu_image *d,
                               const Geometry &g, imgstat_sample sample,
                               const Request &req, imgstat_job_result *res,
                               imgstat_error *err) {
  imgstat_stats_request sr = req.stats();
  double p[IMGSTAT_MAX_PERCENTILES + 1];
  p[0] = 50;
  for (int k = 0; k < sr.npercentiles; k++)
    p[k + 1] = sr.percentiles[k];
  int np = sr.npercentiles + 1;
  std::vector<float> plane;
  for (int c = 0; c < g.channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    imgstat_status s =
        imgstat_gpu_image_histogram(gpu, d, c, nullptr, p, np, v, h, err);
    if (s != IMGSTAT_OK)
      return s;
    imgstat_moments m;
    if (sample == IMGSTAT_F32) {
      uint64_t n = (uint64_t)g.width * g.height;
      try {
        plane.resize((size_t)n);
      } catch (const std::bad_alloc &) {
        return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
      }
      s = imgstat_gpu_image_download(gpu, d, c, plane.data(), err);
      if (s != IMGSTAT_OK)
        return s;
      imgstat_moments_f32(plane.data(), n, &m);
    } else {
      imgstat_moments_from_histogram(h, &m);
    }
    imgstat_hist_figures *f = &res->hist_figures[c];
    imgstat_hist_figures_compute(h, &m, sr.percentiles, sr.npercentiles, f);
    if (h->total) {
      f->median = v[0];
      for (int k = 0; k < sr.npercentiles; k++)
        f->percentile[k] = v[k + 1];
    }
  }
  res->has_histograms = 1;
  res->hist_backend = IMGSTAT_BACKEND_GPU;
  return IMGSTAT_OK;
}

// Host clock stamps of stats_cuda's phases, for tests/gpu/bench/py_overhead.py
// (_imgstat._cuda_stats_phases): where a call spends its time.
struct Phases {
  static constexpr int kMax = 8;
  const char *name[kMax];
  std::chrono::steady_clock::time_point at[kMax];
  int n = 0;
  void stamp(const char *what) {
    if (n < kMax) {
      name[n] = what;
      at[n++] = std::chrono::steady_clock::now();
    }
  }
};

// A CUDA array's statistics (and histograms): computed on its device,
// where it lives, with no copy of the pixels to the host (f32 histograms:
// see cuda_histograms). The record is the CPU's for the same pixels but
// for "backend". Only in builds with CUDA (check_cuda_array first).
Outcome stats_cuda(const char *base, int device, uintptr_t stream,
                   const Geometry &g, imgstat_sample sample, const Request &req,
                   Phases *ph = nullptr) {
  if (ph)
    ph->stamp("start");
  std::lock_guard<std::mutex> lock(cuda_lock());
  imgstat_error err;
  err.status = IMGSTAT_OK;
  err.message[0] = '\0';
  imgstat_gpu *gpu = nullptr;
  imgstat_gpu_image *dimg = nullptr;
  // the record is computed where it is kept (no copy of the result)
  auto k = std::make_shared<Kept>("<cuda array>", req);
  imgstat_job_result &res = k->res;
  imgstat_status s = gpu_for(device, &gpu, &err);
  if (ph)
    ph->stamp("context");
  if (s == IMGSTAT_OK)
    s = wrap_cuda(gpu, base, g, sample, stream, &dimg, &err);
  if (ph)
    ph->stamp("wrap (on the producer's stream)");
  if (s == IMGSTAT_OK)
    s = imgstat_gpu_image_stats(gpu, dimg, IMGSTAT_KERNEL_FAST, res.partial,
                                &err);
  if (ph)
    ph->stamp("reduction (launches, copy, wait)");
  if (s == IMGSTAT_OK && req.histogram)
    s = cuda_histograms(gpu, dimg, g, sample, req, &res, &err);
  imgstat_gpu_image_release(gpu, dimg);
  if (ph)
    ph->stamp("release");
  if (s != IMGSTAT_OK)
    return {false, nullptr, failure_from("<cuda array>", s, err)};
  res.width = g.width;
  res.height = g.height;
  res.channels = g.channels;
  res.sample = sample;
  res.backend = IMGSTAT_BACKEND_GPU;
  return {true, std::move(k), Failure()};
}

// The phases of one stats_cuda call on a CUDA array (no histograms):
// [(phase, microseconds)], for tests/gpu/bench/py_overhead.py.
nb::list cuda_stats_phases(AnyArray a, const std::string &layout) {
  Request req = make_request(0, false, std::nullopt, "auto");
  imgstat_sample sample = sample_of(a);
  Geometry g = geometry_of(a, layout);
  if (a.device_type() != nb::device::cuda::value)
    throw nb::value_error("a CUDA array");
  check_cuda_array(g, req, "_cuda_stats_phases");
  Phases ph;
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)a.data(), a.device_id(), 1, g, sample, req,
                   &ph);
  }
  nb::tuple t = result_tuple(r);
  ph.stamp("result (the record kept)");
  nb::list out;
  for (int k = 1; k < ph.n; k++)
    out.append(nb::make_tuple(
        ph.name[k],
        std::chrono::duration<double, std::micro>(ph.at[k] - ph.at[k - 1])
            .count()));
  return out;
}

nb::tuple stats_array(AnyArray a, const std::string &layout, int ddof,
                      bool histogram,
                      std::optional<std::vector<double>> percentiles,
                      const std::string &backend, uintptr_t stream) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  imgstat_sample sample = sample_of(a);
  Geometry g = geometry_of(a, layout);
  int dev = a.device_type();
  Outcome r;
  if (dev == nb::device::cuda::value) {
    check_cuda_array(g, req, "imgstat.stats");
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)a.data(), a.device_id(), stream, g, sample,
                   req);
  } else if (dev == nb::device::cpu::value ||
             dev == nb::device::cuda_host::value) {
    nb::gil_scoped_release nogil;
    r = stats_host_array(a, g, sample, req);
  } else {
    throw nb::value_error("imgstat.stats: arrays on this kind of device are "
                          "not supported (CPU and CUDA are)");
  }
  return result_tuple(r);
}

// An object that offers only __cuda_array_interface__ (Numba): its pointer,
// shape and strides (in elements) as the Python side read them; device -1
// is the current one; `stream` the interface's (0: none).
nb::tuple stats_cuda_interface(uintptr_t ptr, int device, uintptr_t stream,
                               const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &strides,
                               const std::string &dtype,
                               const std::string &layout, int ddof,
                               bool histogram,
                               std::optional<std::vector<double>> percentiles,
                               const std::string &backend) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  imgstat_sample sample;
  if (dtype == "uint8")
    sample = IMGSTAT_U8;
  else if (dtype == "uint16")
    sample = IMGSTAT_U16;
  else if (dtype == "float32")
    sample = IMGSTAT_F32;
  else
    throw nb::type_error("imgstat.stats: the array's dtype must be uint8, "
                         "uint16 or float32");
  if (shape.size() != strides.size())
    throw nb::value_error("imgstat.stats: an image array is HW, HWC or CHW");
  Geometry g = geometry_from(shape.size(), shape.data(), strides.data(),
                             shape.size() == 3 && layout_chw(layout));
  check_cuda_array(g, req, "imgstat.stats");
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)ptr, device, stream, g, sample, req);
  }
  return result_tuple(r);
}

// ---- a torch CUDA tensor: the fast path ------------------------------

// A new reference from the C API as an object, a Python error as the
// exception it is.
nb::object checked(PyObject *o) {
  if (!o)
    throw nb::python_error();
  return nb::steal(o);
}

int64_t int_of(PyObject *o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred())
    throw nb::python_error();
  return (int64_t)v;
}

// The statistics of a torch tensor x read from its own fields (its DLPack
// export costs as much again as the rest of a small call): None unless it
// is a non-empty CUDA tensor of HW, HWC or CHW of one of `dtypes` (torch's
// uint8, uint16 and float32, in that order; None for one this torch lacks),
// which then takes the general path. The work is queued on torch's current
// stream on the tensor's device, which `raw_stream(device)` gives (0: the
// legacy default stream).
nb::object stats_torch(nb::handle x, nb::tuple dtypes, nb::handle raw_stream,
                       bool chw, int ddof, bool histogram,
                       std::optional<std::vector<double>> percentiles,
                       const std::string &backend) {
  static PyObject *const kIsCuda = PyUnicode_InternFromString("is_cuda"),
                         *const kDtype = PyUnicode_InternFromString("dtype"),
                         *const kShape = PyUnicode_InternFromString("shape"),
                         *const kStride = PyUnicode_InternFromString("stride"),
                         *const kDevice =
                             PyUnicode_InternFromString("get_device"),
                         *const kDataPtr =
                             PyUnicode_InternFromString("data_ptr");
  if (!kIsCuda || !kDtype || !kShape || !kStride || !kDevice || !kDataPtr)
    throw nb::python_error();
  if (checked(PyObject_GetAttr(x.ptr(), kIsCuda)).ptr() != Py_True ||
      nb::len(dtypes) != 3)
    return nb::none();
  nb::object dtype = checked(PyObject_GetAttr(x.ptr(), kDtype));
  const imgstat_sample samples[3] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  int which = -1;
  for (int k = 0; k < 3 && which < 0; k++)
    if (dtype.is(dtypes[k]))
      which = k;
  if (which < 0)
    return nb::none();
  nb::object shape = checked(PyObject_GetAttr(x.ptr(), kShape));
  nb::object strides = checked(PyObject_CallMethodNoArgs(x.ptr(), kStride));
  if (!PyTuple_Check(shape.ptr()) || !PyTuple_Check(strides.ptr()))
    return nb::none();
  Py_ssize_t nd = PyTuple_GET_SIZE(shape.ptr());
  if (nd < 2 || nd > 3 || PyTuple_GET_SIZE(strides.ptr()) != nd)
    return nb::none();
  int64_t dims[3], steps[3];
  for (Py_ssize_t k = 0; k < nd; k++) {
    dims[k] = int_of(PyTuple_GET_ITEM(shape.ptr(), k));
    steps[k] = int_of(PyTuple_GET_ITEM(strides.ptr(), k));
    if (dims[k] == 0)
      return nb::none(); // empty: the general path says so
  }
  nb::object dev_obj = checked(PyObject_CallMethodNoArgs(x.ptr(), kDevice));
  const int64_t device = int_of(dev_obj.ptr());
  const uintptr_t ptr = (uintptr_t)int_of(
      checked(PyObject_CallMethodNoArgs(x.ptr(), kDataPtr)).ptr());
  uintptr_t stream = (uintptr_t)int_of(
      checked(PyObject_CallOneArg(raw_stream.ptr(), dev_obj.ptr())).ptr());
  if (stream == 0)
    stream = 1; // torch's 0: the legacy default stream
  Request req = make_request(ddof, histogram, percentiles, backend);
  Geometry g = geometry_from((size_t)nd, dims, steps, nd == 3 && chw);
  check_cuda_array(g, req, "imgstat.stats");
  Outcome r;
  {
    nb::gil_scoped_release nogil;
    r = stats_cuda((const char *)ptr, (int)device, stream, g, samples[which],
                   req);
  }
  return result_tuple(r);
}

// ---- normalization of a CUDA array ------------------------------------

// The shape of a normalized array in the input's layout (HW: one channel):
// its dimensions into shape, their number returned.
size_t out_shape(size_t ndim, bool hwc, size_t h, size_t w, size_t ch,
                 size_t shape[3]) {
  if (ndim == 2) {
    shape[0] = h;
    shape[1] = w;
    return 2;
  }
  shape[0] = hwc ? h : ch;
  shape[1] = hwc ? w : h;
  shape[2] = hwc ? ch : w;
  return 3;
}

// Device memory of a GPU context, owned by a capsule (the array returned).
struct DeviceBuffer {
  imgstat_gpu *gpu;
  void *p;
};

// The normalized image of a CUDA array, on its device: measured, planned
// and applied there (the plan is the host path's: the same rules, the same
// bytes), written into a new device allocation in the input's layout. No
// pixel goes through the host. Returns (True, array) with the array a
// DLPack-capable nanobind array on the same device, owning its memory, or
// (False, failure).
nb::object normalize_cuda(const AnyArray &a, const Geometry &g,
                          imgstat_sample sample, const imgstat_norm_options &o,
                          const Request &req, bool hwc_layout,
                          uintptr_t stream) {
  check_cuda_array(g, req, "imgstat.normalize");
  const bool hwc = hwc_layout && a.ndim() == 3;
  const char *base = (const char *)a.data();
  const int device = a.device_id();
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  imgstat_status s;
  imgstat_gpu *gpu = nullptr;
  void *out = nullptr;
  imgstat_norm_plan plan;
  std::memset(&plan, 0, sizeof plan);
  {
    nb::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(cuda_lock());
    imgstat_gpu_image *d = nullptr;
    s = gpu_for(device, &gpu, &err);
    if (s == IMGSTAT_OK)
      s = wrap_cuda(gpu, base, g, sample, stream, &d, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_image_norm_plan(gpu, d, &o, nullptr, &plan, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_malloc(gpu,
                             (size_t)g.width * g.height *
                                 (size_t)plan.channels_out *
                                 (size_t)plan.out_sample,
                             &out, &err);
    if (s == IMGSTAT_OK)
      s = imgstat_gpu_image_norm_apply_device(gpu, d, &plan, out, hwc, &err);
    imgstat_gpu_image_release(gpu, d);
    if (s != IMGSTAT_OK) {
      imgstat_gpu_free(gpu, out);
      out = nullptr;
    }
  }
  if (s != IMGSTAT_OK)
    return nb::make_tuple(false,
                          failure_tuple(failure_from("<cuda array>", s, err)));
  DeviceBuffer *owned = new (std::nothrow) DeviceBuffer{gpu, out};
  if (!owned) {
    imgstat_gpu_free(gpu, out);
    throw std::bad_alloc();
  }
  nb::capsule owner(owned, [](void *p) noexcept {
    DeviceBuffer *b = (DeviceBuffer *)p;
    imgstat_gpu_free(b->gpu, b->p);
    delete b;
  });
  size_t shape[3];
  size_t nd = out_shape(a.ndim(), hwc, g.height, g.width,
                        (size_t)plan.channels_out, shape);
  nb::dlpack::dtype dt = plan.out_sample == IMGSTAT_U8 ? nb::dtype<uint8_t>()
                         : plan.out_sample == IMGSTAT_U16
                             ? nb::dtype<uint16_t>()
                             : nb::dtype<float>();
  nb::ndarray<> arr(out, nd, shape, owner, nullptr, dt, nb::device::cuda::value,
                    imgstat_gpu_device(gpu));
  // an ndarray without a framework goes to Python as a DLPack capsule; the
  // package wraps it with its device (imgstat.DeviceArray, or the input's
  // framework)
  return nb::make_tuple(true,
                        nb::make_tuple(nb::cast(arr, nb::rv_policy::reference),
                                       imgstat_gpu_device(gpu)));
}

// ---- normalization of an array
// ------------------------------------------------

// The normalization options of imgstat.normalize and normalize_files, as
// the command line's normalize takes them (channels: the array's, for the
// count of mean and std values; 0 when each input says).
imgstat_norm_options
norm_options(const std::string &mode,
             const std::optional<std::vector<double>> &mean,
             const std::optional<std::vector<double>> &std_,
             const std::optional<std::vector<double>> &clip,
             const std::optional<std::vector<double>> &range, bool linked,
             const std::string &dtype, const std::string &alpha,
             const std::string &scale, int channels) {
  imgstat_norm_options o;
  std::memset(&o, 0, sizeof o);
  if (mean || std_) {
    if (!mean || !std_)
      throw nb::value_error("mean and std go together");
    if (mean->size() != std_->size() || mean->size() > IMGSTAT_MAX_CHANNELS ||
        (mean->size() != 1 && channels > 0 && (int)mean->size() != channels))
      throw nb::value_error("mean and std: one value, or one per channel");
    if (mode != "minmax" && mode != "given")
      throw nb::value_error("mean and std replace the mode");
    o.mode = IMGSTAT_NORM_GIVEN;
    o.nstats = (int)mean->size();
    for (size_t k = 0; k < mean->size(); k++) {
      if (!((*std_)[k] > 0))
        throw nb::value_error("std must be positive");
      o.mean[k] = (*mean)[k];
      o.std[k] = (*std_)[k];
    }
  } else if (range) {
    if (range->size() != 2 || !((*range)[0] < (*range)[1]))
      throw nb::value_error("range must be (low, high) with low < high");
    o.mode = IMGSTAT_NORM_RANGE;
    o.range_low = (*range)[0];
    o.range_high = (*range)[1];
  } else if (mode == "minmax") {
    o.mode = IMGSTAT_NORM_MINMAX;
  } else if (mode == "clip") {
    o.mode = IMGSTAT_NORM_CLIP;
    std::vector<double> c = clip ? *clip : std::vector<double>{1.0, 99.0};
    if (c.size() != 2 || !(c[0] >= 0 && c[0] <= c[1] && c[1] <= 100))
      throw nb::value_error("clip must be (low, high) percentiles, "
                            "0 <= low <= high <= 100");
    o.clip_low = c[0];
    o.clip_high = c[1];
  } else if (mode == "zscore") {
    o.mode = IMGSTAT_NORM_ZSCORE;
  } else {
    throw nb::value_error(
        "mode must be 'minmax', 'clip' or 'zscore' (or give mean and std, "
        "or range)");
  }
  bool float_mode =
      o.mode == IMGSTAT_NORM_ZSCORE || o.mode == IMGSTAT_NORM_GIVEN;
  if (linked && o.mode != IMGSTAT_NORM_MINMAX && o.mode != IMGSTAT_NORM_CLIP)
    throw nb::value_error("linked applies to minmax and clip");
  o.linked = linked;
  if (dtype == "uint8")
    o.out_sample = IMGSTAT_U8;
  else if (dtype == "uint16")
    o.out_sample = IMGSTAT_U16;
  else if (dtype == "float32")
    o.out_sample = IMGSTAT_F32;
  else if (!dtype.empty())
    throw nb::value_error("dtype must be 'uint8', 'uint16' or 'float32'");
  if (float_mode && o.out_sample && o.out_sample != IMGSTAT_F32)
    throw nb::value_error("zscore and mean/std give float32");
  if (alpha == "copy")
    o.alpha = IMGSTAT_ALPHA_COPY;
  else if (alpha == "normalize")
    o.alpha = IMGSTAT_ALPHA_NORMALIZE;
  else if (alpha == "drop")
    o.alpha = IMGSTAT_ALPHA_DROP;
  else
    throw nb::value_error("alpha must be 'copy', 'normalize' or 'drop'");
  if (scale == "unit")
    o.scale_unit = 1;
  else if (scale != "none" && scale != "native")
    throw nb::value_error("scale must be 'none' or 'unit'");
  return o;
}

// The normalized image of a host array (numpy out, the input's layout): the
// engine's normalize with the command line's modes.
nb::object normalize_array(AnyArray a, const std::string &layout,
                           const std::string &mode,
                           std::optional<std::vector<double>> mean,
                           std::optional<std::vector<double>> std_,
                           std::optional<std::vector<double>> clip,
                           std::optional<std::vector<double>> range,
                           bool linked, const std::string &dtype,
                           const std::string &alpha, const std::string &scale,
                           const std::string &backend, uintptr_t stream) {
  imgstat_sample sample = sample_of(a);
  Geometry g = geometry_of(a, layout);
  const bool on_cuda = a.device_type() == nb::device::cuda::value;
  if (a.device_type() != nb::device::cpu::value &&
      a.device_type() != nb::device::cuda_host::value && !on_cuda)
    throw nb::value_error("imgstat.normalize: arrays on this kind of device "
                          "are not supported (CPU and CUDA are)");
  imgstat_norm_options o = norm_options(mode, mean, std_, clip, range, linked,
                                        dtype, alpha, scale, g.channels);
  Request req = make_request(0, false, std::nullopt, backend);
  if (on_cuda)
    return normalize_cuda(a, g, sample, o, req, layout == "hwc", stream);
  size_t item = sample == IMGSTAT_U8 ? 1 : sample == IMGSTAT_U16 ? 2 : 4;

  imgstat_job_result res;
  std::memset(&res, 0, sizeof res);
  imgstat_status s;
  Failure f;
  {
    nb::gil_scoped_release nogil;
    imgstat_image img;
    std::memset(&img, 0, sizeof img);
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    void *planes[IMGSTAT_MAX_CHANNELS] = {nullptr};
    size_t stride = 0;
    if (borrow_planes((const char *)a.data(), g, item, planes, &stride)) {
      s = imgstat_image_wrap(&img, g.width, g.height, g.channels, sample,
                             planes, stride, &err);
    } else {
      s = imgstat_image_alloc(&img, g.width, g.height, g.channels, sample, 0,
                              &err);
      if (s == IMGSTAT_OK)
        copy_planes(a, g, item, &img);
    }
    if (s == IMGSTAT_OK)
      s = imgstat_engine_normalize(engine_for(req.backend), "<array>", &img, &o,
                                   &res);
    else
      f = failure_from("<array>", s, err);
    if (s != IMGSTAT_OK && f.path.empty())
      f = failure_of("<array>", &res);
    imgstat_image_free(&img);
  }
  if (s != IMGSTAT_OK) {
    imgstat_job_result_free(&res);
    return nb::make_tuple(false, failure_tuple(f));
  }
  // the output in the input's layout (HW with one channel)
  const imgstat_image *out = &res.output;
  size_t oitem = out->sample == IMGSTAT_U8    ? 1
                 : out->sample == IMGSTAT_U16 ? 2
                                              : 4;
  size_t w = out->width, h = out->height, ch = (size_t)out->channels;
  size_t ostride = imgstat_image_stride(out);
  char *buf = (char *)std::malloc(w * h * ch * oitem);
  if (!buf) {
    imgstat_job_result_free(&res);
    throw std::bad_alloc();
  }
  bool hwc = layout == "hwc" && (a.ndim() == 3);
  {
    nb::gil_scoped_release nogil;
    for (size_t c = 0; c < ch; c++)
      for (size_t y = 0; y < h; y++) {
        const char *row = (const char *)out->planes[c] + y * ostride;
        if (!hwc) {
          std::memcpy(buf + ((c * h + y) * w) * oitem, row, w * oitem);
          continue;
        }
        for (size_t x = 0; x < w; x++)
          std::memcpy(buf + ((y * w + x) * ch + c) * oitem, row + x * oitem,
                      oitem);
      }
  }
  nb::dlpack::dtype dt = out->sample == IMGSTAT_U8    ? nb::dtype<uint8_t>()
                         : out->sample == IMGSTAT_U16 ? nb::dtype<uint16_t>()
                                                      : nb::dtype<float>();
  imgstat_job_result_free(&res);
  nb::capsule owner(buf, [](void *p) noexcept { std::free(p); });
  size_t shape[3];
  size_t nd = out_shape(a.ndim(), hwc, h, w, ch, shape);
  nb::ndarray<nb::numpy> arr(buf, nd, shape, owner, nullptr, dt);
  return nb::make_tuple(true, arr.cast());
}

// imgstat.normalize of an object that offers only __cuda_array_interface__
// (Numba): its pointer, shape and strides (in elements) as the Python side
// read them, made a CUDA array of device `device` (-1: the current one);
// `stream` the interface's (0: none).
nb::object normalize_cuda_interface(
    uintptr_t ptr, int device, uintptr_t stream,
    const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
    const std::string &dtype, const std::string &layout,
    const std::string &mode, std::optional<std::vector<double>> mean,
    std::optional<std::vector<double>> std_,
    std::optional<std::vector<double>> clip,
    std::optional<std::vector<double>> range, bool linked,
    const std::string &out_dtype, const std::string &alpha,
    const std::string &scale, const std::string &backend) {
  nb::dlpack::dtype dt;
  if (dtype == "uint8")
    dt = nb::dtype<uint8_t>();
  else if (dtype == "uint16")
    dt = nb::dtype<uint16_t>();
  else if (dtype == "float32")
    dt = nb::dtype<float>();
  else
    throw nb::type_error("imgstat.normalize: the array's dtype must be "
                         "uint8, uint16 or float32");
  if (shape.size() != strides.size() || shape.size() < 2 || shape.size() > 3)
    throw nb::value_error("imgstat.normalize: an image array is HW, HWC or "
                          "CHW");
  size_t sh[3];
  for (size_t k = 0; k < shape.size(); k++) {
    if (shape[k] <= 0 || shape[k] > (int64_t)UINT32_MAX)
      throw nb::value_error("imgstat.normalize: bad array shape");
    sh[k] = (size_t)shape[k];
  }
  AnyArray a((const void *)ptr, shape.size(), sh, nb::handle(), strides.data(),
             dt, nb::device::cuda::value, device);
  return normalize_array(a, layout, mode, mean, std_, clip, range, linked,
                         out_dtype, alpha, scale, backend, stream);
}

// ---- runs (imgstat_run.h)
// ----------------------------------------------------

struct RunArgs {
  std::vector<std::string> paths;
  std::vector<int> is_list;
  int jobs = 0;
  Request req;
  bool dataset = false;
  imgstat_dataset_options ds{};
  bool follow = false;
};

RunArgs make_run_args(const std::vector<std::string> &inputs,
                      const std::vector<std::string> &lists, int jobs,
                      bool follow, Request req,
                      const std::string &jpeg_decoder) {
  if (!imgstat_jpeg_decoder_from_name(jpeg_decoder.c_str(), &req.jpeg))
    throw nb::value_error("jpeg_decoder must be 'auto', 'cpu' or 'gpu'");
  if (req.jpeg == IMGSTAT_JPEG_DECODER_GPU &&
      req.backend == IMGSTAT_BACKEND_CPU)
    throw nb::value_error("jpeg_decoder='gpu' cannot be used with "
                          "backend='cpu'");
  RunArgs a;
  for (const auto &p : inputs) {
    if (p == "-")
      throw nb::value_error("'-' (standard input) is not an input here");
    a.paths.push_back(p);
    a.is_list.push_back(0);
  }
  for (const auto &l : lists) {
    a.paths.push_back(l);
    a.is_list.push_back(1);
  }
  if (a.paths.empty())
    throw nb::value_error("no inputs");
  if (jobs < 0)
    throw nb::value_error("jobs must be 0 (one per core) or more");
  a.jobs = jobs;
  a.follow = follow;
  a.req = req;
  return a;
}

// One input's outcome, queued for the Python thread.
struct Item {
  bool ok;
  Emitted record; // ok: the record
  Failure f;      // else
};

// A run on a thread of its own: its items wait in a bounded queue for the
// Python iterator; closing it cancels the run and waits for the thread.
class Scan {
public:
  explicit Scan(RunArgs args) : args_(std::move(args)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Scan() { close(); }

  // The next item (ok, the record's dict or the failure tuple), or None at
  // the end. The
  // GIL is released while waiting; Ctrl-C (a pending signal) cancels.
  nb::object next() {
    for (;;) {
      std::optional<Item> got;
      bool finished = false;
      {
        nb::gil_scoped_release nogil;
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait_for(lock, std::chrono::milliseconds(50),
                     [this] { return !queue_.empty() || done_; });
        if (!queue_.empty()) {
          got = std::move(queue_.front());
          queue_.pop_front();
          cv_.notify_all();
        } else if (done_) {
          finished = true;
        }
      }
      if (got) {
        if (got->ok)
          return nb::make_tuple(
              true, DictSink::build_from([&](const ist_record_sink *k) {
                got->record.replay(k);
              }));
        return nb::make_tuple(false, failure_tuple(got->f));
      }
      if (finished) {
        join();
        if (!error_.empty())
          throw TextError(PyExc_RuntimeError, error_);
        return nb::none();
      }
      if (PyErr_CheckSignals() != 0) {
        close();
        throw nb::python_error();
      }
    }
  }

  void close() {
    cancel_ = 1;
    {
      std::lock_guard<std::mutex> lock(m_);
      queue_.clear();
    }
    cv_.notify_all();
    nb::gil_scoped_release nogil;
    join();
  }

  // The dataset record ({"dataset": {...}}, the command line's JSON) as a
  // dict, after the end, with its names (the extrema's files, the images
  // left out and the outliers, and why) as py_text makes them, not as the
  // text holds them (U+FFFD for bytes that are not UTF-8).
  nb::object dataset_record() {
    if (!dataset_ok_)
      throw std::runtime_error("the run has no dataset record");
    nb::object record =
        nb::module_::import_("json").attr("loads")(py_text(dataset_json_));
    nb::dict ds = nb::cast<nb::dict>(record["dataset"]);
    nb::list stats = nb::cast<nb::list>(ds["stats"]);
    for (size_t c = 0; c < ds_texts_.extrema.size(); c++) {
      const auto &files = ds_texts_.extrema[c];
      if (files.first.empty() && files.second.empty())
        continue; // no values: nulls
      nb::dict ch = nb::cast<nb::dict>(stats[c]);
      ch["min_file"] = py_text(files.first);
      ch["max_file"] = py_text(files.second);
    }
    const char *const keys[2] = {"excluded", "outliers"};
    for (int k = 0; k < 2; k++) {
      nb::list notes = nb::cast<nb::list>(ds[keys[k]]);
      const auto &texts = k ? ds_texts_.outliers : ds_texts_.excluded;
      for (size_t i = 0; i < texts.size(); i++) {
        nb::dict note = nb::cast<nb::dict>(notes[i]);
        note["file"] = py_text(texts[i].first);
        note["reason"] = py_text(texts[i].second);
      }
    }
    return record;
  }

  // The run's progress figures so far: (done, failed, total, total_known).
  nb::tuple progress() {
    std::lock_guard<std::mutex> lock(m_);
    return nb::make_tuple(progress_.done, progress_.failed, progress_.total,
                          (bool)progress_.total_known);
  }

private:
  void join() {
    std::lock_guard<std::mutex> lock(join_m_);
    if (thread_.joinable())
      thread_.join();
  }

  static int on_item(void *ctx, const imgstat_run_item *it,
                     const imgstat_run_progress *p) {
    Scan *s = (Scan *)ctx;
    {
      std::lock_guard<std::mutex> lock(s->m_);
      s->progress_ = *p;
    }
    Item item;
    item.ok = it->result->status == IMGSTAT_OK;
    if (s->args_.dataset && item.ok) /* the dataset wants its failures */
      return s->cancel_ != 0;
    if (item.ok) {
      const Request &req = s->args_.req;
      ist_hist_cli hist = req.hist();
      ist_record rec;
      ist_record_from_job(&rec, it->input->path, it->result, req.ddof, &hist,
                          req.jpeg == IMGSTAT_JPEG_DECODER_GPU);
      item.record = Emitted::of(&rec);
    } else
      item.f = failure_of(it->input->path, it->result);
    std::unique_lock<std::mutex> lock(s->m_);
    s->cv_.wait(lock, [s] { return s->queue_.size() < 256 || s->cancel_; });
    if (s->cancel_)
      return 1;
    s->queue_.push_back(std::move(item));
    s->cv_.notify_all();
    return 0;
  }

  void run() {
    std::vector<imgstat_run_source> sources(args_.paths.size());
    for (size_t k = 0; k < sources.size(); k++) {
      sources[k].is_list = args_.is_list[k];
      sources[k].text = args_.paths[k].c_str();
    }
    imgstat_run_options o;
    std::memset(&o, 0, sizeof o);
    o.sources = sources.data();
    o.nsources = (int)sources.size();
    o.follow = args_.follow;
    o.jobs = args_.jobs;
    o.engine.backend = args_.req.backend;
    o.engine.jpeg_decoder = args_.req.jpeg;
    o.engine.kernel = IMGSTAT_KERNEL_FAST;
    o.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
    o.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
    o.request = args_.req.stats();
    o.dataset = args_.dataset;
    o.ds = args_.ds;
    o.cancel = &cancel_;
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    imgstat_run *run = nullptr;
    imgstat_status s = imgstat_run_create(&o, &run, &err);
    if (s == IMGSTAT_OK) {
      imgstat_run_callbacks cb;
      std::memset(&cb, 0, sizeof cb);
      cb.ctx = this;
      cb.item = on_item;
      imgstat_run_report rep;
      s = imgstat_run_execute(run, &cb, &rep, &err);
      if (s == IMGSTAT_OK && rep.dataset_ok && !rep.cancelled)
        finish_dataset(run);
    }
    imgstat_run_destroy(run);
    std::lock_guard<std::mutex> lock(m_);
    if (s != IMGSTAT_OK)
      error_ = err.message[0] ? err.message : "out of memory";
    done_ = true;
    cv_.notify_all();
  }

  void finish_dataset(imgstat_run *run) {
    imgstat_dataset_result r;
    imgstat_error err;
    std::memset(&err, 0, sizeof err);
    if (imgstat_run_dataset_finish(run, args_.req.ddof, &r, &err) !=
        IMGSTAT_OK) {
      error_ = err.message;
      return;
    }
    ist_hist_cli hist = args_.req.hist();
    imgstat_hist_figures hf[IMGSTAT_MAX_CHANNELS];
    ist_dataset_hist_figures(&r, hist.percentiles, hist.npercentiles, hf);
    char *buf = nullptr;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (f) {
      ist_output_dataset(f, IMGSTAT_OUTPUT_JSON, &r, &hist,
                         hist.fields ? hf : nullptr, 0, 0);
      fclose(f);
      dataset_json_.assign(buf, size);
      free(buf);
      dataset_ok_ = true;
    }
    for (int c = 0; c < r.channels; c++)
      ds_texts_.extrema.emplace_back(
          r.ch[c].has_values ? r.ch[c].min_at.file : "",
          r.ch[c].has_values ? r.ch[c].max_at.file : "");
    for (size_t i = 0; i < r.nexcluded; i++)
      ds_texts_.excluded.emplace_back(r.excluded[i].file, r.excluded[i].reason);
    for (size_t i = 0; i < r.noutliers; i++)
      ds_texts_.outliers.emplace_back(r.outliers[i].file, r.outliers[i].reason);
    imgstat_dataset_result_free(&r);
  }

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
};

Scan *make_scan(nb::handle inputs, nb::handle lists, int jobs, bool follow,
                int ddof, bool histogram,
                std::optional<std::vector<double>> percentiles,
                const std::string &backend, const std::string &jpeg_decoder) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  return new Scan(make_run_args(c_paths(inputs), c_paths(lists), jobs, follow,
                                req, jpeg_decoder));
}

// The dataset record of the inputs (the command line's --dataset-only
// --json) as a dict, and the failures among them: (record, [(path, status,
// message)]).
nb::tuple dataset(nb::handle inputs, nb::handle lists, int jobs, bool follow,
                  const std::string &as, const std::string &scale,
                  double outlier_z, std::optional<std::vector<double>> range,
                  int ddof, bool histogram,
                  std::optional<std::vector<double>> percentiles,
                  const std::string &backend, const std::string &jpeg_decoder) {
  Request req = make_request(ddof, histogram, percentiles, backend);
  RunArgs a = make_run_args(c_paths(inputs), c_paths(lists), jobs, follow, req,
                            jpeg_decoder);
  a.dataset = true;
  std::memset(&a.ds, 0, sizeof a.ds);
  if (!imgstat_dataset_as_from_name(as.c_str(), &a.ds.as))
    throw nb::value_error("as_ must be 'keep', 'gray', 'rgb' or 'rgba'");
  if (scale == "unit")
    a.ds.scale_unit = 1;
  else if (scale != "none" && scale != "native")
    throw nb::value_error("scale must be 'none' or 'unit'");
  if (!(outlier_z > 0))
    throw nb::value_error("outlier_z must be positive");
  a.ds.outlier_z = outlier_z;
  if (range) {
    if (range->size() != 2 || !((*range)[0] < (*range)[1]))
      throw nb::value_error("range must be (low, high) with low < high");
    a.ds.have_range = 1;
    a.ds.lo = (*range)[0];
    a.ds.hi = (*range)[1];
  }
  std::unique_ptr<Scan> scan(new Scan(std::move(a)));
  nb::list failures;
  for (;;) {
    nb::object it = scan->next();
    if (it.is_none())
      break;
    nb::tuple t = nb::cast<nb::tuple>(it);
    if (!nb::cast<bool>(t[0]))
      failures.append(t[1]);
  }
  return nb::make_tuple(scan->dataset_record(), failures);
}

// ---- normalize_files (imgstat/run.h, a normalize run)
// ----------------------------------------------

// A normalize run over files on a thread of its own, the caller waiting with
// the GIL released; Ctrl-C (a pending signal) cancels it.
struct NormFiles {
  imgstat_run_options o{};
  imgstat_run_normalize norm{};
  bool stop_on_failure = false;
  volatile sig_atomic_t cancel = 0;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  // the items: (input, output or None, skipped, failure or None)
  struct Out {
    std::string input, output;
    bool has_output = false, skipped = false, failed = false;
    Failure f;
  };
  std::vector<Out> items;
  imgstat_run_report rep{};
  imgstat_status status = IMGSTAT_OK;
  std::string message;

  static int on_item(void *ctx, const imgstat_run_item *it,
                     const imgstat_run_progress *) {
    NormFiles *n = (NormFiles *)ctx;
    Out out;
    out.input = it->input->path;
    out.skipped = it->skipped;
    if (it->output) {
      out.output = it->output;
      out.has_output = true;
    }
    if (!it->skipped && it->result->status != IMGSTAT_OK) {
      out.failed = true;
      out.f = failure_of(it->input->path, it->result);
    } else if (!it->skipped && it->write_error->message[0]) {
      out.failed = true;
      out.f = Failure{out.has_output ? out.output : out.input,
                      status_name(it->write_error->status),
                      it->write_error->message};
    }
    bool stop = out.failed && n->stop_on_failure;
    std::lock_guard<std::mutex> lock(n->m);
    n->items.push_back(std::move(out));
    return stop;
  }

  // The excluded inputs of a refused dataset, in words.
  static std::string refused(const imgstat_run *run, const char *why) {
    std::string m = why;
    const imgstat_dataset_result *r = imgstat_run_pooled(run);
    for (size_t k = 0; r && k < r->nexcluded && k < 5; k++)
      m += std::string("; ") + r->excluded[k].file + ": " +
           r->excluded[k].reason;
    return m;
  }

  void run() {
    imgstat_run *run = nullptr;
    imgstat_error e;
    std::memset(&e, 0, sizeof e);
    o.normalize = &norm;
    status = imgstat_run_create(&o, &run, &e);
    if (status == IMGSTAT_OK) {
      imgstat_run_callbacks cb;
      std::memset(&cb, 0, sizeof cb);
      cb.ctx = this;
      cb.item = on_item;
      status = imgstat_run_execute(run, &cb, &rep, &e);
    }
    message = status != IMGSTAT_OK && rep.failed_in == IMGSTAT_RUN_STEP_REFUSED
                  ? refused(run, e.message)
                  : e.message;
    imgstat_run_destroy(run);
    std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_all();
  }
};

// Normalizes the inputs into out: (True, [(input, output|None, skipped,
// failure|None)], (done, failed, skipped), cancelled), or (False, kind,
// message) when the run was refused or stopped (kind "arg": bad arguments,
// else "error").
nb::tuple normalize_files(nb::handle inputs, nb::handle lists,
                          nb::handle out_path, int jobs, bool follow,
                          const std::string &mode,
                          std::optional<std::vector<double>> mean,
                          std::optional<std::vector<double>> std_,
                          std::optional<std::vector<double>> clip,
                          std::optional<std::vector<double>> range, bool linked,
                          const std::string &dtype, const std::string &alpha,
                          const std::string &scale, bool dataset,
                          const std::string &as, const std::string &format,
                          const std::string &layout, int compression,
                          bool skip_existing, bool stop_on_failure,
                          const std::string &backend) {
  Request req = make_request(0, false, std::nullopt, backend);
  RunArgs a =
      make_run_args(c_paths(inputs), c_paths(lists), jobs, follow, req, "cpu");
  std::string out = c_path(out_path);
  if (out.empty())
    throw nb::value_error("out must name a file or a folder");
  auto n = std::make_unique<NormFiles>();
  imgstat_run_options &o = n->o;
  imgstat_run_normalize &no = n->norm;
  no.norm = norm_options(mode, mean, std_, clip, range, linked, dtype, alpha,
                         scale, 0);
  no.dataset = dataset;
  if (!imgstat_dataset_as_from_name(as.c_str(), &no.as))
    throw nb::value_error("as_ must be 'keep', 'gray', 'rgb' or 'rgba'");
  if (format == "png")
    no.format = IMGSTAT_FILE_PNG;
  else if (format == "npy")
    no.format = IMGSTAT_FILE_NPY;
  else if (format == "pfm")
    no.format = IMGSTAT_FILE_PFM;
  else if (!format.empty())
    throw nb::value_error("format must be 'png', 'npy' or 'pfm'");
  if (layout == "chw")
    no.layout = IMGSTAT_LAYOUT_CHW;
  else if (layout != "hwc")
    throw nb::value_error("layout must be 'hwc' or 'chw'");
  if (compression >= 0) {
    if (compression > 9)
      throw nb::value_error("compression must be 0 to 9");
    no.png_level = IMGSTAT_PNG_LEVEL(compression);
  }
  std::vector<imgstat_run_source> sources(a.paths.size());
  for (size_t k = 0; k < sources.size(); k++) {
    sources[k].is_list = a.is_list[k];
    sources[k].text = a.paths[k].c_str();
  }
  o.sources = sources.data();
  o.nsources = (int)sources.size();
  o.follow = a.follow;
  o.jobs = a.jobs;
  o.engine.backend = req.backend;
  o.engine.kernel = IMGSTAT_KERNEL_FAST;
  o.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  o.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  no.out = out.c_str();
  no.skip_existing = skip_existing;
  o.cancel = &n->cancel;
  n->stop_on_failure = stop_on_failure;
  NormFiles *np = n.get();
  std::thread worker([np] { np->run(); });
  bool interrupted = false;
  for (;;) {
    {
      nb::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(np->m);
      if (np->cv.wait_for(lock, std::chrono::milliseconds(50),
                          [np] { return np->done; }))
        break;
    }
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true; // the run stops; its temporaries are removed
      np->cancel = 1;
    }
  }
  {
    nb::gil_scoped_release nogil;
    worker.join();
  }
  if (interrupted)
    throw nb::python_error();
  if (np->status != IMGSTAT_OK)
    return nb::make_tuple(false,
                          np->status == IMGSTAT_ERR_ARG ? "arg" : "error",
                          py_text(np->message));
  nb::list items;
  for (const auto &it : np->items)
    items.append(nb::make_tuple(
        py_text(it.input), it.has_output ? py_text(it.output) : nb::none(),
        it.skipped, it.failed ? nb::object(failure_tuple(it.f)) : nb::none()));
  return nb::make_tuple(
      true, items,
      nb::make_tuple(np->rep.done, np->rep.failed, np->rep.skipped),
      (bool)np->rep.cancelled);
}
} // namespace

NB_MODULE(_imgstat, m) {
  m.doc() = "imgstat's native part: use the imgstat package";
  nb::register_exception_translator(translate_text_error);
  m.attr("version") = IMGSTAT_VERSION;
  m.attr("cuda") = (bool)imgstat_gpu_compiled();
  m.def("stats_path", &stats_path, nb::arg("path"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("stats_bytes", &stats_bytes, nb::arg("data"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("stats_cuda_interface", &stats_cuda_interface, nb::arg("ptr"),
        nb::arg("device"), nb::arg("stream"), nb::arg("shape"),
        nb::arg("strides"), nb::arg("dtype"), nb::arg("layout"),
        nb::arg("ddof"), nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("stats_torch", &stats_torch, nb::arg("x"), nb::arg("dtypes"),
        nb::arg("raw_stream"), nb::arg("chw"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"));
  m.def("_cuda_stats_phases", &cuda_stats_phases, nb::arg("array"),
        nb::arg("layout"));
  m.def("stats_array", &stats_array, nb::arg("array"), nb::arg("layout"),
        nb::arg("ddof"), nb::arg("histogram"), nb::arg("percentiles").none(),
        nb::arg("backend"), nb::arg("stream") = 1);
  m.def("normalize_array", &normalize_array, nb::arg("array"),
        nb::arg("layout"), nb::arg("mode"), nb::arg("mean").none(),
        nb::arg("std").none(), nb::arg("clip").none(), nb::arg("range").none(),
        nb::arg("linked"), nb::arg("dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("backend"), nb::arg("stream") = 1);
  m.def("normalize_cuda_interface", &normalize_cuda_interface, nb::arg("ptr"),
        nb::arg("device"), nb::arg("stream"), nb::arg("shape"),
        nb::arg("strides"), nb::arg("dtype"), nb::arg("layout"),
        nb::arg("mode"), nb::arg("mean").none(), nb::arg("std").none(),
        nb::arg("clip").none(), nb::arg("range").none(), nb::arg("linked"),
        nb::arg("out_dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("backend"));
  m.def("normalize_files", &normalize_files, nb::arg("inputs"),
        nb::arg("lists"), nb::arg("out"), nb::arg("jobs"), nb::arg("follow"),
        nb::arg("mode"), nb::arg("mean").none(), nb::arg("std").none(),
        nb::arg("clip").none(), nb::arg("range").none(), nb::arg("linked"),
        nb::arg("dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("dataset"), nb::arg("as_"), nb::arg("format"),
        nb::arg("layout"), nb::arg("compression"), nb::arg("skip_existing"),
        nb::arg("stop_on_failure"), nb::arg("backend"));
  nb::class_<Record>(m, "Record")
      .def("dict", &Record::dict)
      .def("column", &Record::column, nb::arg("key"));
  nb::class_<Scan>(m, "Scan")
      .def("next", &Scan::next)
      .def("close", &Scan::close)
      .def("progress", &Scan::progress);
  m.def("scan", &make_scan, nb::arg("inputs"), nb::arg("lists"),
        nb::arg("jobs"), nb::arg("follow"), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("jpeg_decoder"), nb::rv_policy::take_ownership);
  m.def("dataset", &dataset, nb::arg("inputs"), nb::arg("lists"),
        nb::arg("jobs"), nb::arg("follow"), nb::arg("as_"), nb::arg("scale"),
        nb::arg("outlier_z"), nb::arg("range").none(), nb::arg("ddof"),
        nb::arg("histogram"), nb::arg("percentiles").none(), nb::arg("backend"),
        nb::arg("jpeg_decoder"));
}
