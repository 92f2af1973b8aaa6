// Records as Python objects: a record's dict straight from its JSON shape
// (the library's record sink), one per-channel column of it, a record kept
// as the library's result until Python reads it (Record), a run's records
// kept with no Python object (Emitted), the dataset record's JSON. The one
// part that includes the record formats (imgstat/record.h).
#include "binding.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
#include "imgstat/record.h"
}

namespace binding {

namespace {

// The values of a record's JSON shape (imgstat_record_emit) as Python objects:
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
    imgstat_record_format_double(buf, sizeof buf, v);
    return std::strpbrk(buf, ".eE") ? PyFloat_FromDouble(v)
                                    : PyLong_FromString(buf, nullptr, 10);
  }
  return PyFloat_FromDouble(v);
}

// The record as a Python dict, straight from its JSON shape. Errors of the
// Python API are noted, not thrown (C frames in between).
class DictSink {
public:
  static nb::object build(const imgstat_record *rec) {
    return build_from(
        [rec](const imgstat_record_sink *k) { imgstat_record_emit(rec, k); });
  }
  // The dict of what emit(sink) gives the sink.
  template <class Emit> static nb::object build_from(Emit emit) {
    DictSink d;
    const imgstat_record_sink k = {&d, open, close, uint, real, text, null};
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
  static nb::object build(const imgstat_record *rec, const char *key) {
    ColumnSink d;
    d.want_ = key;
    const imgstat_record_sink k = {&d, open, close, uint, real, text, null};
    imgstat_record_emit(rec, &k);
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
  int depth_ = 0;             // containers open (the root is 1)
  bool in_stats_ = false;     // the root's "stats" array is open
  std::vector<PyObject *> v_; // one a channel, as the array is read
  int n_ = 0;                 // the "stats" array's objects so far
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
    else if (d->depth_ == 3 && d->in_stats_ && d->n_ < IMGSTAT_MAX_CHANNELS) {
      d->n_++;
      d->v_.push_back(nullptr);
    }
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

} // namespace

// A record's items (imgstat_record_emit's calls of its sink) kept as they came,
// with no Python object: a run's thread records a result's record (the
// result is the run's), the Python thread then makes its dict of them
// (DictSink), the same dict as stats() gives of the same result.
class Emitted {
public:
  static Emitted of(const imgstat_record *rec) {
    Emitted e;
    const imgstat_record_sink k = {&e, open, close, uint, real, text, null};
    imgstat_record_emit(rec, &k);
    return e;
  }
  // Calls the sink as imgstat_record_emit did.
  void replay(const imgstat_record_sink *k) const {
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

namespace {

// What the records show of histograms: the command line's defaults (256
// display bins), percentiles as asked.
imgstat_record_hist hist_of(const Request &req) {
  imgstat_record_hist h;
  std::memset(&h, 0, sizeof h);
  h.fields = req.histogram;
  h.npercentiles = (int)req.percentiles.size();
  for (size_t k = 0; k < req.percentiles.size(); k++)
    h.percentiles[k] = req.percentiles[k];
  h.bins = 256;
  return h;
}

// The record of a result (hist: its histogram fields, kept by the caller
// while the record is read).
imgstat_record record_from(const char *file, const imgstat_job_result *res,
                           const Request &req, imgstat_record_hist *hist) {
  *hist = hist_of(req);
  imgstat_record rec;
  imgstat_record_from_job(&rec, file, res, req.ddof, hist,
                          req.jpeg == IMGSTAT_JPEG_DECODER_GPU);
  return rec;
}

imgstat_record record_of(const Kept &k, imgstat_record_hist *hist) {
  return record_from(k.file.c_str(), &k.res, k.req, hist);
}

nb::object record_dict(const Kept &k) {
  imgstat_record_hist hist;
  imgstat_record rec = record_of(k, &hist);
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
    imgstat_record_hist hist;
    imgstat_record rec = record_of(*kept, &hist);
    return ColumnSink::build(&rec, key);
  }
};

} // namespace

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

void EmittedFree::operator()(Emitted *e) const { delete e; }

EmittedPtr emitted_of(const char *file, const imgstat_job_result *res,
                      const Request &req) {
  imgstat_record_hist hist;
  imgstat_record rec = record_from(file, res, req, &hist);
  return EmittedPtr(new Emitted(Emitted::of(&rec)));
}

nb::object emitted_dict(const Emitted &e) {
  return DictSink::build_from(
      [&](const imgstat_record_sink *k) { e.replay(k); });
}

bool dataset_json(const imgstat_dataset_result *r, const Request &req,
                  std::string *out) {
  imgstat_record_hist hist = hist_of(req);
  std::vector<imgstat_hist_figures> hfs(r->channels ? r->channels : 1);
  imgstat_hist_figures *hf = hfs.data();
  imgstat_dataset_hist_figures(r, hist.percentiles, hist.npercentiles, hf);
  char *buf = nullptr;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (!f)
    return false;
  imgstat_record_write_dataset(f, IMGSTAT_RECORD_JSON, r, &hist,
                               hist.fields ? hf : nullptr, 0, 0);
  fclose(f);
  out->assign(buf, size);
  free(buf);
  return true;
}

// A framework's form of a dataset record's constants (Dataset.emit): the
// record's scale and per-channel mean and std (None: not defined) into a
// result, and the library's one conversion (imgstat_dataset_emit), so that
// the text is the command line's --emit byte for byte.
static std::string
dataset_emit(const std::string &form, bool scale_unit,
             const std::vector<std::optional<double>> &mean,
             const std::vector<std::optional<double>> &std_) {
  imgstat_emit f;
  if (!imgstat_emit_from_name(form.c_str(), &f))
    throw nb::value_error(
        ("emit: '" + form + "' is not one of " IMGSTAT_EMIT_NAMES).c_str());
  if (mean.size() != std_.size() || mean.size() > IMGSTAT_MAX_CHANNELS)
    throw nb::value_error("emit: a mean and a std per channel");
  imgstat_dataset_result r;
  std::memset(&r, 0, sizeof r);
  r.scale_unit = scale_unit;
  r.channels = (int)mean.size();
  std::vector<imgstat_dataset_channel> chs(mean.size() ? mean.size() : 1);
  std::memset(chs.data(), 0, chs.size() * sizeof chs[0]);
  r.ch = chs.data();
  for (size_t c = 0; c < mean.size(); c++) {
    r.ch[c].has_values = mean[c].has_value();
    r.ch[c].mean = mean[c].value_or(0.0);
    r.ch[c].has_std = std_[c].has_value();
    r.ch[c].std = std_[c].value_or(0.0);
  }
  char line[IMGSTAT_EMIT_MAX];
  imgstat_error err;
  std::memset(&err, 0, sizeof err);
  if (imgstat_dataset_emit(&r, f, line, sizeof line, &err) != IMGSTAT_OK)
    throw nb::value_error(err.message);
  return line;
}

void register_records(nb::module_ &m) {
  m.def("dataset_emit", &dataset_emit, nb::arg("form"), nb::arg("scale_unit"),
        nb::arg("mean"), nb::arg("std"));
  nb::class_<Record>(m, "Record")
      .def("dict", &Record::dict)
      .def("column", &Record::column, nb::arg("key"));
}

} // namespace binding
