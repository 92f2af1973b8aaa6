// normalize_files: a normalize run over files (imgstat/run.h) on a
// thread of its own, its outputs written by the library; the caller waits
// with the GIL released.
#include "binding.h"

#include <chrono>

namespace binding {

namespace {

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
nb::tuple
normalize_files(nb::handle inputs, nb::handle lists, nb::handle out_path,
                int jobs, bool follow, const std::string &mode,
                std::optional<std::vector<double>> mean,
                std::optional<std::vector<double>> std_,
                std::optional<std::vector<double>> clip,
                std::optional<std::vector<double>> range, bool linked,
                const std::string &dtype, const std::string &alpha,
                const std::string &scale, bool dataset, const std::string &as,
                const std::string &format, const std::string &layout,
                int compression, bool skip_existing, bool stop_on_failure,
                const std::string &backend, uint64_t sample, uint64_t seed) {
  Request req = make_request(0, false, std::nullopt, backend);
  RunArgs a =
      make_run_args(c_paths(inputs), c_paths(lists), jobs, follow, req, "cpu");
  std::string out = c_path(out_path);
  if (out.empty())
    throw nb::value_error("out must name a file or a folder");
  auto n = std::make_unique<NormFiles>();
  imgstat_run_options &o = n->o;
  imgstat_run_normalize &no = n->norm;
  no.norm = norm_options(
      {mode, mean, std_, clip, range, linked, dtype, alpha, scale}, 0);
  no.dataset = dataset;
  no.as = as_of(as, no.norm.scale_unit);
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
  std::vector<imgstat_run_source> sources = run_sources(a);
  o.sources = sources.data();
  o.nsources = (int)sources.size();
  o.follow = a.follow;
  o.jobs = a.jobs;
  o.sample = sample; // the pooling pass's sample (0: every input)
  o.seed = seed;
  engine_defaults(&o.engine, req.backend);
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

void register_normalize_files(nb::module_ &m) {
  m.def("normalize_files", &normalize_files, nb::arg("inputs"),
        nb::arg("lists"), nb::arg("out"), nb::arg("jobs"), nb::arg("follow"),
        nb::arg("mode"), nb::arg("mean").none(), nb::arg("std").none(),
        nb::arg("clip").none(), nb::arg("range").none(), nb::arg("linked"),
        nb::arg("dtype"), nb::arg("alpha"), nb::arg("scale"),
        nb::arg("dataset"), nb::arg("as_"), nb::arg("format"),
        nb::arg("layout"), nb::arg("compression"), nb::arg("skip_existing"),
        nb::arg("stop_on_failure"), nb::arg("backend"), nb::arg("sample"),
        nb::arg("seed"));
}

} // namespace binding
